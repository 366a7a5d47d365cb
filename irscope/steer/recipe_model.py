"""A recipe, as read from its TOML file: the target it is for, its layers and its variants.

A recipe file (recipes/README.md) holds default tables, kernel sections ([kernel."GLOB"]) and
variants ([variant.NAME], each with its own kernel sections). Each table becomes a Layer: the
options, env knobs, constexprs, layout pins and loop pins it sets, and the source it is shown as.
Recipe.layers() lists the layers that apply to one kernel, lowest precedence first; layering.apply()
lays them onto Settings. recipe_file.py reads and validates the TOML into this model.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from irscope.errors import BadInput, did_you_mean
from irscope.kernel.targets import Target
from irscope.records import RecipeRef
from irscope.steer.pins import LayoutPin, LoopPin, PartitionPin


@dataclass
class Layer:
    """One table of a recipe: defaults, a kernel section, a variant, or a variant's kernel section."""

    source: str  # shown in the summary: 'recipe h100 [variant deep, kernel matmul_kernel]'
    kernel_specific: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    constexprs: dict[str, str] = field(default_factory=dict)  # name -> text spec.parse_value reads
    layouts: list[LayoutPin] = field(default_factory=list)
    loops: list[LoopPin] = field(default_factory=list)
    partitions: list[PartitionPin] = field(default_factory=list)


@dataclass
class Variant:
    """[variant.NAME]: its defaults (layer) and its own kernel sections (glob, layer)."""

    name: str
    purpose: str
    layer: Layer
    kernels: list[tuple[str, Layer]]


@dataclass
class Recipe:
    """One recipe file: its target (and the others it fits), defaults, kernel sections and variants."""

    name: str
    path: Path
    target: Target
    target_text: str
    targets: list[Target]
    purpose: str
    defaults: Layer
    kernels: list[tuple[str, Layer]]
    variants: dict[str, Variant]

    def accepts(self, target: Target) -> bool:
        """Whether the recipe fits this target (its own, or one of [recipe] targets)."""
        return any(t.name == target.name for t in self.targets)

    def layers(self, kernel: str | None, variant: str | None) -> list[Layer]:
        """The layers that apply to `kernel`, lowest precedence first (kernel None: the default tables only)."""
        out = [self.defaults] + [
            layer for glob, layer in self.kernels if kernel is not None and fnmatch.fnmatchcase(kernel, glob)
        ]
        if variant is not None:
            v = self.variant(variant)
            out += [v.layer] + [
                layer for glob, layer in v.kernels if kernel is not None and fnmatch.fnmatchcase(kernel, glob)
            ]
        return out

    def variant(self, name: str) -> Variant:
        """The variant of that name; BadInput naming the variants there are."""
        if name not in self.variants:
            have = ", ".join(self.variants) or "none"
            starts = [v for v in self.variants if v.startswith(name)]
            hint = did_you_mean(name, self.variants) or (
                " (did you mean " + " or ".join(repr(v) for v in starts) + "?)" if starts else ""
            )
            raise BadInput(f"recipe {self.name} has no variant {name!r}{hint}; variants: {have}")
        return self.variants[name]

    def describe(self, variant: str | None) -> RecipeRef:
        """What a compile records of the recipe it applied (Pins.recipe)."""
        return {"name": self.name, "path": str(self.path), "variant": variant, "target": self.target.name}
