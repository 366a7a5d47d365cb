"""`irscope recipes list|show|check`."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.group("recipes")
def recipes_group():
    """Recipes: TOML files that pin a target's options, env knobs, constexprs, loops and layouts.

    \b
    irscope recipes list
    irscope recipes show h100 [--kernel matmul_kernel] [--variant deep-pipeline]
    irscope recipes check recipes/*.toml        (exit 2 on any problem)
    irscope dump k.py --recipe mi300x [--variant pingpong] -s SIG
    """


@recipes_group.command("list")
def recipes_list():
    """Every recipe found ($IRSCOPE_RECIPES, then irscope's recipes/): name, target, purpose."""
    from irscope.steer import recipes
    from irscope.views import recipes as view

    view.listing(recipes.summary_rows(), recipes.recipe_dirs())


@recipes_group.command("show")
@click.argument("name", metavar="NAME|PATH")
@click.option(
    "--kernel", "-k", metavar="NAME", help="Show what applies to this kernel, with where each value comes from."
)
@click.option(
    "--variant",
    metavar="NAME",
    help="Show the recipe as this variant applies it: its defaults and kernel sections on top "
    "(with --kernel: for that kernel).",
)
def recipes_show(name, kernel, variant):
    """A recipe: its target, purpose, defaults, kernel sections and variants (and the file)."""
    from irscope.kernel.settings import Settings
    from irscope.steer import layering, recipes
    from irscope.views import recipes as view

    recipe = recipes.load(recipes.find(name))
    v = recipe.variant(variant) if variant else None
    view.show_header(recipe, v)
    if kernel or v:
        # kernel None: the default tables with the variant's on top, each value with where it comes from
        settings = layering.apply(Settings(recipe.target, f"recipe {recipe.name}"), recipe, variant, kernel)
        view.show_applied(recipe, variant, v, kernel, settings)
    else:
        view.show_layers(recipe)


@recipes_group.command("check")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path), metavar="FILE...")
def recipes_check(files):
    """Validate recipe files (default: every recipe found). Exit 2 with FILE:LINE for each problem."""
    from irscope.steer import recipes
    from irscope.views import recipes as view

    bad = 0
    for path in list(files) or recipes.all_paths():
        errors = recipes.check(path)
        view.check_result(path, errors)
        bad += bool(errors)
    if bad:
        sys.exit(2)
