"""The pins of one compile (Pins, what kernel/settings calls a PinSet) and their Plan: which stages to edit.

Settings.pins holds a Pins: the loop and layout pins and constexprs a recipe and the command
line gave, in precedence order. compile.compiler never imports steer; it calls

    Pins.plan(spec, settings) -> Plan
    Plan.edits        [(stage, rewrite)] in pipeline order: the compile stops after each such
                      stage, the text is rewritten (loops.py in TTIR, layouts.py in TTGIR), written
                      to a file and compiled onward with triton.compile(file); the stages are merged
    Plan.check(art)   the records of checks.py, kept in manifest["pins"]
    Plan.describe()   the pins, for a compile failure's message
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from irscope import adapter
from irscope.artifacts import Artifacts
from irscope.errors import BadInput
from irscope.kernel.settings import Settings
from irscope.kernel.spec import KernelSpec
from irscope.records import PinCheck, RecipeRef
from irscope.steer.verify_child import verify_isolated

if TYPE_CHECKING:  # annotations only: a plain compile (no pins) never loads the pin parsers
    from irscope.steer.pins import ConstPin, LayoutPin, LoopPin, PartitionPin


@dataclass
class Pins:
    """Everything beyond plain options and env knobs that a recipe or the command line pinned."""

    loops: list[LoopPin] = field(default_factory=list)
    layouts: list[LayoutPin] = field(default_factory=list)
    partitions: list[PartitionPin] = field(default_factory=list)
    constexprs: dict[str, ConstPin] = field(default_factory=dict)
    recipe: RecipeRef | None = None  # {"name", "path", "variant", "target"} when a recipe was applied
    overridden: dict[str, str] = field(default_factory=dict)  # constexpr -> what the command line gave

    def __bool__(self) -> bool:
        return bool(self.loops or self.layouts or self.partitions or self.constexprs or self.recipe)

    def plan(self, spec: KernelSpec, settings: Settings) -> Plan:
        """The stage edits and output checks of one compile (the PinSet protocol compile.compiler calls)."""
        return plan(spec, settings)

    def canonical(self) -> dict[str, Any]:
        """What decides the output (and irscope's cache key)."""
        return {
            "loops": [[p.where, [[k, v] for k, v in p.attrs]] for p in self.loops],
            "layouts": [[p.alias, p.value, [list(f) for f in p.fields]] for p in self.layouts],
            "partitions": [[p.index, p.registers] for p in self.partitions],
            "constexprs": {k: v.text for k, v in sorted(self.constexprs.items())},
            "recipe": self.recipe,
            "sources": [p.source for p in self.loops]
            + [p.source for p in self.layouts]
            + [p.source for p in self.partitions]
            + [v.source for _, v in sorted(self.constexprs.items())],
        }


@dataclass
class Plan:
    """The IR edits one compile needs, and the checks of every pin against its output."""

    spec: KernelSpec
    settings: Settings
    edits: list[tuple[str, Callable[[str], str]]] = field(default_factory=list)
    loop_done: list[dict] = field(default_factory=list)  # what rewrite_loops did, per pin
    layout_done: list[dict] = field(default_factory=list)  # what apply_layout_pins did, per pin
    partition_done: list[dict] = field(default_factory=list)  # what apply_partition_pins did, per pin

    def describe(self) -> str:
        """The loop and layout pins, as they are written on the command line."""
        pins = self.settings.pins
        parts = (
            ([p.text() for p in pins.loops] + [p.text() for p in pins.layouts] + [p.text() for p in pins.partitions])
            if pins
            else []
        )
        return "; ".join(parts)

    def check(self, art: Artifacts) -> list[PinCheck]:
        """Every pin and option checked against the compiled output (checks.py)."""
        from irscope.steer import (
            checks,  # needed once a compile ran: a cache hit never loads it
        )

        return checks.check(self.spec, self.settings, self.loop_done, self.layout_done, art, self.partition_done)


def plan(spec: KernelSpec, settings: Settings) -> Plan:
    """Which stages to edit (in pipeline order) for this kernel's pins."""
    # the rewrites are needed once a compile runs: a cache hit (a plain re-dump) never loads them
    from irscope.steer.layouts import apply_layout_pins
    from irscope.steer.loops import rewrite_loops

    p = Plan(spec, settings)
    pins = settings.pins
    if not pins:
        return p
    gluon = adapter.is_gluon(spec.fn)
    if pins.loops and not gluon:

        def edit_ttir(text: str) -> str:
            out, p.loop_done = rewrite_loops(text, pins.loops, spec.kernel, spec.file)
            return out

        p.edits.append(("ttir", edit_ttir))
    if pins.layouts or pins.partitions:

        def edit_ttgir(text: str) -> str:
            if pins.partitions:
                from irscope.steer.partitions import apply_partition_pins

                text, p.partition_done = apply_partition_pins(text, pins.partitions, spec.kernel)
            if not pins.layouts:
                return text
            out, p.layout_done = apply_layout_pins(text, pins.layouts, settings.target.warp_size)
            # in a child process: Triton's native code aborts (SIGABRT) on some layouts it cannot build
            error = verify_isolated(out, "ttgir", settings.target)
            if error:
                applied = [d for d in p.layout_done if "skipped" not in d]
                what = "; ".join(d["pin"].text() for d in applied)
                srcs = ", ".join(dict.fromkeys(d["pin"].source for d in applied))
                raise BadInput(f"{srcs} {what}: illegal layout, rejected by the MLIR parser/verifier: {error}")
            return out

        p.edits.append(("ttgir", edit_ttgir))
    return p
