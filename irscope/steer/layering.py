"""Layering a recipe onto one kernel's settings: the precedence every compile goes through.

Triton defaults (or a spec file's options) < recipe defaults < recipe kernel section(s) < variant
defaults < variant kernel section(s); jobs.for_kernel lays the command line on top. Each option
keeps its source (Settings.overlay), constexprs, loop and layout pins theirs. Apart from recipes.py
(finding and reading recipe files): a plain compile, with no recipe, needs only this.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from irscope.errors import BadInput, did_you_mean
from irscope.kernel.settings import Settings
from irscope.steer.pinset import Pins

if TYPE_CHECKING:  # only for the annotation: a plain compile has no recipe to model
    from irscope.steer.recipe_model import Recipe


def apply(
    settings: Settings,
    recipe: Recipe | None,
    variant: str | None,
    kernel: str | None,
    *,
    params: list[str] | None = None,
) -> Settings:
    """Settings for one kernel: `settings` < recipe defaults < kernel sections < variant (< the command
    line, which jobs.for_kernel lays on top).

    `params` (the kernel's parameter names) lets a recipe's constexprs be checked:
    a default for a parameter the kernel lacks is skipped, a kernel section's is an error
    (loop and layout pins are checked the same way when compiling: loops.py, layouts.py, `optional`).
    kernel None: the default tables (and the variant's) alone, as `recipes show --variant` lists them.
    """
    pins = Pins(
        loops=list(settings.pins.loops) if settings.pins else [],
        layouts=list(settings.pins.layouts) if settings.pins else [],
        partitions=list(settings.pins.partitions) if settings.pins else [],
        constexprs=dict(settings.pins.constexprs) if settings.pins else {},
    )
    out = settings
    if recipe is not None:
        if not recipe.accepts(settings.target):
            raise BadInput(
                f"recipe {recipe.name} is for {', '.join(t.name for t in recipe.targets)}, not {settings.target.name}"
            )
        pins.recipe = recipe.describe(variant)
        # the pin model: a recipe was read (recipes.py loaded it already); a plain compile never loads it
        from irscope.steer.pins import ConstPin

        for layer in recipe.layers(kernel, variant):
            out = out.overlay(layer.options, layer.source).overlay_env(layer.env, layer.source)
            for k, text in layer.constexprs.items():
                if params is not None and k not in params:
                    if layer.kernel_specific:
                        raise BadInput(
                            f"{recipe.path}: {layer.source}: constexpr {k!r} is not a parameter of "
                            f"{kernel}{did_you_mean(k, params)}; parameters: {', '.join(params)}"
                        )
                    continue
                pins.constexprs[k] = ConstPin(k, text, layer.source)
            pins.layouts.extend(layer.layouts)
            pins.loops.extend(layer.loops)
            pins.partitions.extend(layer.partitions)
    return replace(out, pins=pins)


# ------------------------------------------------------------------ what `recipes list / show` shows
