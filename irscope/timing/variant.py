"""What is timed: a variant (one job of a kernel under a name) and its ready-bound launch.

The parent compiles a variant (art) and hands it to the timing process, which loads the same
binary from Triton's cache (binary) and launches it; the measurement fills samples_ms. The
launch is bound once, outside the timed loop: the grid (a grid expression sees the variant's own
constexprs) and the positional arguments (the launch's, the variant's constexprs, the defaults).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from irscope.adapter import runtime
from irscope.compile import compiler
from irscope.errors import BadInput
from irscope.kernel.settings import Settings
from irscope.kernel.spec import KernelSpec
from irscope.timing.launch import Launch, parse_grid
from irscope.timing.reference import bind


@dataclass
class Variant:
    name: str
    spec: KernelSpec
    settings: Settings
    art: Any = None  # the dump (compile_spec), in the parent
    binary: Any = None  # Triton's CompiledKernel, in the timing process
    status: str = "ok"  # ok | compile failed | faulted | wrong result
    reason: str = ""
    samples_ms: list[float] = field(default_factory=list)
    dropped: str = ""  # a sweep stopped timing it: clearly slower than the leader (why)
    ref: Any = None  # a reference.Reference (--ref): a torch call timed alike, not a kernel

    @classmethod
    def of_reference(cls, ref: Any) -> Variant:
        """The --ref call as a variant, timed alike: the one variant with no kernel (no spec, no settings)."""
        return cls(ref.label, None, None, ref=ref)  # type: ignore[arg-type]  # typed for the kernels' variants


def _positional(v: Variant, args: dict[str, Any]) -> list[Any]:
    values = []
    for p in v.spec.params:
        if p.name in args:
            values.append(args[p.name])
        elif p.name in v.spec.args and v.spec.args[p.name].kind == "constexpr":
            values.append(v.spec.args[p.name].value)
        elif p.has_default:
            values.append(p.default)
        else:
            raise BadInput(f"{v.spec.kernel}: no launch value for {p.name}; give it in --args")
    return values


def grid_for(v: Variant, launch: Launch) -> tuple[int, int, int]:
    """The launch grid of this variant: a grid expression sees the variant's own constexprs."""
    if not launch.grid_expr:
        return launch.grid
    env = dict(launch.args)
    env.update({name: a.value for name, a in v.spec.args.items() if a.kind == "constexpr"})
    return parse_grid(launch.grid_expr, env)


def launcher(v: Variant, args: dict[str, Any], launch: Launch) -> Callable[[], None]:
    """A ready-bound launch: the runner and its arguments resolved once, outside the timed loop."""
    if v.ref is not None:
        return bind(v.ref, args)
    compiled = v.binary or v.art.compiled
    runner = compiled[grid_for(v, launch)]
    values = _positional(v, args)
    if not runtime.launches_constexprs(compiled):  # built from pinned IR: its launcher has the IR's arguments
        signature = compiler.bind(v.spec, v.settings)[1]
        values = [x for x, p in zip(values, v.spec.params) if signature.get(p.name) != "constexpr"]
    return lambda: runner(*values)
