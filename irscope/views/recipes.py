"""The recipes commands' views: the list of recipes found, one recipe shown (as written, or as a
variant and kernel apply it, each value with where it comes from), and `recipes check`'s lines.

Everything here formats what steer.recipes loaded, applied or checked; the text of a recipe's
tables comes from recipes.layer_lines and overridden_by, which know what each pin sets.
"""

from __future__ import annotations

from pathlib import Path

import click

from irscope.kernel.settings import Settings
from irscope.steer import recipe_model, recipes
from irscope.views.console import console, esc


def listing(rows: list[tuple[str, str, str, str]], dirs: list[Path]) -> None:
    """recipes list: name, target, purpose (or the problem) per recipe; where none was found, where we looked."""
    from rich.table import Table

    t = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("name", "target", "purpose"):
        t.add_column(col)
    for name, target, purpose, problem in rows:
        t.add_row(name, esc(target), esc(purpose) if not problem else f"[red]invalid: {esc(problem)}[/red]")
    console().print(t)
    if not rows:
        click.echo(f"no recipes in {', '.join(str(d) for d in dirs)}")


def show_header(recipe: recipes.Recipe, variant: recipe_model.Variant | None) -> None:
    """The recipe's name, file, target(s), purpose and the variant chosen."""
    con = console()
    con.print(f"[bold]{recipe.name}[/bold]  {recipe.path}")
    con.print(
        f"  target    {recipe.target_text} ({recipe.target.name}, {recipe.target.hardware.family})"
        + (f"; also fits {', '.join(t.name for t in recipe.targets[1:])}" if len(recipe.targets) > 1 else "")
    )
    con.print(f"  purpose   {esc(recipe.purpose)}")
    if variant:
        con.print(f"  variant   {esc(variant.name)}  {esc(variant.purpose)}")


def show_applied(
    recipe: recipes.Recipe,
    variant_name: str | None,
    variant: recipe_model.Variant | None,
    kernel: str | None,
    settings: Settings,
) -> None:
    """What a variant and/or kernel gets (settings: the recipe applied), each value with its source;
    without a kernel, the recipe's kernel sections after it, as the variant leaves them."""
    con = console()
    if kernel:
        con.print(f"  for kernel {kernel}" + (f", variant {variant_name}" if variant_name else "") + ":")
    else:
        con.print(f"  [bold]defaults, with variant {esc(variant_name)}[/bold]")
    for k, val in settings.options.items():
        con.print(f"    {k} = {val}  [cyan]({esc(settings.sources[k])})[/cyan]")
    for k, val in settings.env.items():
        con.print(f"    env {k} = {val}  [cyan]({esc(settings.sources['env:' + k])})[/cyan]")
    pins = settings.pins
    for c in pins.constexprs.values() if pins else []:
        con.print(f"    constexpr {c.name} = {esc(c.text)}  [cyan]({esc(c.source)})[/cyan]")
    for kind, listed in (("loop", pins.loops if pins else []), ("layout", pins.layouts if pins else [])):
        for i, p in enumerate(listed):
            by = recipes.overridden_by(p, listed[i + 1 :])
            con.print(
                f"    {kind} {esc(p.text())}  [cyan]({esc(p.source)})[/cyan]"
                + (f"  [yellow]overridden by {esc(by)}[/yellow]" if by else "")
            )
    if kernel or variant is None:
        return
    # the variant's defaults rank above the recipe's kernel sections, its own kernel sections above both
    sections: list[tuple[str, recipe_model.Layer, recipe_model.Layer | None]] = [
        (f"kernel {g}", lay, variant.layer) for g, lay in recipe.kernels
    ]
    sections += [(f"variant {variant.name}, kernel {g}", lay, None) for g, lay in variant.kernels]
    for title, layer, over in sections:
        con.print(f"  [bold]{esc(title)}[/bold]")
        for line in recipes.layer_lines(layer, over) or ["(nothing)"]:
            con.print(f"    {esc(line)}")


def show_layers(recipe: recipes.Recipe) -> None:
    """The recipe as written: defaults, kernel sections, then each variant with its own tables."""
    con = console()
    for title, layer in [("defaults", recipe.defaults)] + [(f"kernel {g}", lay) for g, lay in recipe.kernels]:
        con.print(f"  [bold]{esc(title)}[/bold]")
        for line in recipes.layer_lines(layer) or ["(nothing)"]:
            con.print(f"    {esc(line)}")
    for v in recipe.variants.values():
        con.print(f"  [bold]variant {esc(v.name)}[/bold]  {esc(v.purpose)}")
        for line in recipes.layer_lines(v.layer):
            con.print(f"    {esc(line)}")
        for g, lay in v.kernels:
            for line in recipes.layer_lines(lay):
                con.print(f"    kernel {esc(g)}: {esc(line)}")


def check_result(path: Path, errors: list[str]) -> None:
    """recipes check: one error line per problem on stderr, or 'PATH: ok'."""
    for e in errors:
        click.echo(f"irscope: error: {e}", err=True)
    if not errors:
        click.echo(f"{path}: ok")
