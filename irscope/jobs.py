"""Jobs: what a command asks for, resolved into (spec, settings) pairs, the one way every command does it.

    Request    what to compile: a kernel file or a spec file, kernel names, the specialization
               (--signature/--arg/--const), the target, layers of KEY=VALUE options (--set, a diff
               side's --a/--b, bench's --try, a sweep's --grid), a recipe and variant, and pins
    resolve    Request -> [Job], one per kernel:
                 target    chosen once (choose_target): --target, else the recipe's, else the
                           spec file's, else the local GPU, else cuda:90
                 settings  spec-file options < recipe layers < the request's option layers, each
                           merged by Settings.overlay, which records where every value came from
                 spec      built through kernel.spec.build_spec, with the recipe's constexprs where
                           the command line leaves them open
    variants   one job per recipe variant (dump --variant X --variant Y, bench)
    vary       a job with more options or constexprs on top (a sweep's config, a bench --try)

    script_target / for_capture   a script to capture: its target, and the request its kernels'
               jobs are built under (for_kernel, from what each launch bound)

dump, passes, diff (each side), bench (each variant), sweep (each config) and capture (each kernel,
through for_kernel) all build their jobs here; so do the tests and benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from irscope import adapter
from irscope.errors import BadInput
from irscope.kernel import loader
from irscope.kernel.settings import Settings, check_typed, parse_assignments, settable_options
from irscope.kernel.spec import ArgSpec, KernelSpec, build_spec, split_signature
from irscope.kernel.specfile import read_spec_document
from irscope.kernel.targets import Target, parse_target, resolve_target
from irscope.records import SpecFile
from irscope.steer import layering
from irscope.steer.pinset import Pins

if TYPE_CHECKING:  # the annotation only: reading recipes is loaded when one is named (_recipe)
    from irscope.steer.recipe_model import Recipe


@dataclass(frozen=True)
class Request:
    """What a command asks to compile, as given (text): resolve() checks and types it."""

    file: Path
    kernels: tuple[str, ...] = ()
    signature: str | None = None
    named_args: tuple[str, ...] = ()
    consts: tuple[str, ...] = ()
    target: str | None = None
    target_flag: str = "--target"  # the flag that gave `target` (a diff side: --a-target)
    sets: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (source, ("KEY=VALUE", ...)), lowest first
    recipe: str | None = None
    variant: str | None = None
    pin_layouts: tuple[str, ...] = ()
    pin_loops: tuple[str, ...] = ()
    pin_partitions: tuple[str, ...] = ()
    # kernels given as objects (the Python API: irscope.dump(matmul_kernel, ...)): used as they are,
    # instead of loading `file` again; `file` is then the file they were defined in
    loaded: tuple[loader.KernelRef, ...] = ()

    @property
    def is_spec_file(self) -> bool:
        return is_spec_file(self.file)

    @property
    def has_specialization(self) -> bool:
        """--signature, --arg or --const given: FILE is a kernel file, not a script to capture."""
        return self.signature is not None or bool(self.named_args or self.consts)

    @property
    def steered(self) -> bool:
        return bool(self.recipe or self.variant or self.pin_layouts or self.pin_loops or self.pin_partitions)

    def with_sets(self, items: tuple[str, ...] | list[str], source: str) -> Request:
        """Another layer of KEY=VALUE options on top, recorded as coming from `source`."""
        return replace(self, sets=self.sets + ((source, tuple(items)),)) if items else self

    def all_sets(self) -> list[str]:
        return [item for _, items in self.sets for item in items]


@dataclass
class Job:
    """One compile: a kernel with one specialization under one settings."""

    spec: KernelSpec
    settings: Settings
    label: str = ""  # what sets this job apart from its siblings (a variant, a side, a config)


def is_spec_file(path: Path | str) -> bool:
    """A spec file (a capture, or a dump's manifest.json) stands where a kernel file would."""
    p = Path(path)
    return p.suffix == ".json" and p.is_file()


def choose_target(
    requested: str | None,
    recipe: Recipe | None = None,
    recorded: str | None = None,
    recorded_in: str = "",
    flag: str = "--target",
) -> tuple[Target, str]:
    """The target and a word on why: the flag wins (it must fit the recipe), then the recipe's own
    target, then the one a spec file recorded, then the local GPU, then cuda:90."""
    if requested:
        tgt, _ = resolve_target(requested)
        if recipe is not None and not recipe.accepts(tgt):
            fits = ", ".join(t.name for t in recipe.targets)
            raise BadInput(
                f"{flag} {requested} ({tgt.name}) does not fit recipe {recipe.name}, which is for "
                f"{fits}; leave out {flag}, or pick a recipe for {tgt.name}"
            )
        return tgt, "requested" if flag == "--target" else flag
    if recipe is not None:
        return recipe.target, f"recipe {recipe.name}"
    if recorded:
        return parse_target(recorded), f"from {recorded_in}"
    return resolve_target(None)


def script_target(req: Request) -> tuple[Target, str]:
    """The target of a script to capture (no kernel loaded yet, no recipe applied): as choose_target."""
    return choose_target(req.target, flag=req.target_flag)


def for_capture(req: Request) -> Request:
    """The request a capture's kernels are built under (for_kernel): its option layers; its steering
    (recipe, variant, pins) does not apply to a capture (capture.command.not_applied says so)."""
    return replace(req, recipe=None, variant=None, pin_layouts=(), pin_loops=(), pin_partitions=())


def resolve(req: Request) -> list[Job]:
    """Request -> one Job per kernel; everything is checked before anything compiles."""
    recipe = _recipe(req.recipe, req.variant)
    base_options: dict[str, Any] = {}
    doc: SpecFile | None = None
    file: Path | str = req.file
    kernels = list(req.kernels)
    if req.is_spec_file:
        if req.signature is not None:  # its args name every parameter: a positional --signature would lose
            raise BadInput(
                f"--signature: {Path(req.file).name} is a spec file, which carries its own "
                f'specialization (its "args"); leave out --signature, or change one parameter '
                f"with --arg NAME=ELEMENT"
            )
        doc = read_spec_document(req.file)
        if kernels and doc["kernel"] not in kernels:
            raise BadInput(f"{req.file}: holds kernel {doc['kernel']!r}, not {', '.join(kernels)}")
        base_options = dict(doc.get("options") or {})
        file, kernels = doc["file"], [doc["kernel"]]
    tgt, reason = choose_target(
        req.target, recipe, doc.get("target") if doc else None, Path(req.file).name, req.target_flag
    )
    base = Settings(tgt, reason)
    if base_options:
        valid = settable_options(tgt)
        unknown = [k for k in base_options if k not in valid]
        if unknown:
            raise BadInput(
                f"option {unknown[0]!r} (from {Path(req.file).name}) is not an option of Triton's "
                f"{tgt.backend} backend here"
            )
        for key, value in base_options.items():
            check_typed(key, value, valid[key].type, f"{req.file}:")
        base = base.overlay(base_options, Path(req.file).name)
    refs = list(req.loaded) if req.loaded and doc is None else _load_kernels(file, kernels, doc, tgt)
    jobs = [for_kernel(ref, base, req, recipe=recipe, recorded_args=doc["args"] if doc else None) for ref in refs]
    check_loop_pins_fit(jobs, req.pin_loops)
    return jobs


def resolve_one(req: Request, what: str) -> Job:
    """resolve() for commands that work on one kernel ('diff compares', 'bench times', ...)."""
    jobs = resolve(req)
    if len(jobs) != 1:
        raise BadInput(
            f"{what} one kernel at a time; choose one with --kernel ({', '.join(j.spec.kernel for j in jobs)})"
        )
    return jobs[0]


def variants(req: Request, names: tuple[str, ...] | list[str]) -> list[Job]:
    """One job per recipe variant, in the order given (--variant X --variant Y); plain resolve() for <= 1."""
    if len(names) <= 1:
        return resolve(replace(req, variant=names[0] if names else req.variant))
    out = []
    for name in names:
        for job in resolve(replace(req, variant=name)):
            job.label = f"variant {name}"
            out.append(job)
    return out


def for_kernel(
    ref: loader.KernelRef,
    base: Settings,
    req: Request,
    *,
    recipe: Recipe | None = None,
    recorded_args: dict[str, str | int | float] | None = None,
    named_args: list[str] | None = None,
    consts: list[str] | None = None,
) -> Job:
    """The job of one loaded kernel: base settings < recipe < the request's option layers and pins.

    `recorded_args` are a spec file's elements (they rank below the recipe's constexprs);
    `named_args`/`consts` replace the request's (capture gives the launch's own).
    """
    params = [p.name for p in ref.fn.params]
    settings = layering.apply(base, recipe, req.variant, ref.name, params=params)
    for source, items in req.sets:
        settings = settings.overlay(parse_assignments(list(items), settings.target, source), source)
    pins = settings.pins if settings.pins is not None else Pins()
    if req.pin_loops or req.pin_layouts or req.pin_partitions:
        # the pin grammar (and its MLIR helpers): loaded only when pins are given, like _recipe's reader
        from irscope.steer.pins import (
            parse_pin_layout,
            parse_pin_loop,
            parse_pin_partition,
        )

        pins.loops.extend(parse_pin_loop(t) for t in req.pin_loops)
        pins.layouts.extend(parse_pin_layout(t) for t in req.pin_layouts)
        given_parts = [parse_pin_partition(t) for t in req.pin_partitions]
        for i, a in enumerate(given_parts):
            for b in given_parts[:i]:
                if a.index == b.index and a.registers != b.registers:
                    raise BadInput(
                        f"--pin-partition worker{a.index}: given twice, with registers={b.registers} "
                        f"and registers={a.registers}; give one value per partition"
                    )
        pins.partitions.extend(given_parts)
    settings = replace(settings, pins=pins)
    given = list(req.named_args if named_args is None else named_args)
    if recorded_args:
        given = [f"{k}={v}" for k, v in recorded_args.items() if k not in pins.constexprs] + given
    sig, named, cons = _with_recipe_constexprs(
        ref, req.signature, given, list(req.consts if consts is None else consts), pins
    )
    if sig is None and not named and not cons:
        missing = [p.name for p in ref.fn.params if not p.has_default]
        if missing:
            raise BadInput(
                f"{ref.name}: give a specialization: --signature with one element per parameter "
                f"({', '.join(params)}) or --arg/--const NAME=..."
            )
    spec = build_spec(ref, sig, named, cons)
    by_hand = not req.is_spec_file and named_args is None and consts is None and not recorded_args
    return Job(spec, _options_from_params(spec, settings) if by_hand and adapter.is_gluon(ref.fn) else settings)


def _options_from_params(spec: KernelSpec, settings: Settings) -> Settings:
    """In a Gluon kernel, a hand-written specialization of a constexpr parameter named like an option
    (`num_warps: gl.constexpr`, the Gluon idiom) sets that option too, unless the option was set
    otherwise: a launch passes it by keyword, once, and it sets both (the kernel's layouts are sized by
    it; with the option left at 4, an 8-warp layout is 'invalid'). Triton kernels keep the option's own
    value (a positional launch does not set it); captures and spec files keep what the launch had."""
    options = settable_options(settings.target)
    taken = {
        name: arg.value
        for name, arg in spec.args.items()
        if arg.kind == "constexpr" and name in options and arg.value is not None and name not in settings.options
    }
    return settings.overlay(taken, f"the kernel's {', '.join(taken)} parameter") if taken else settings


def vary(job: Job, values: dict[str, Any], source: str) -> Job:
    """The job with these options and constexprs (typed already) on top: a sweep config, a --try."""
    options = settable_options(job.settings.target)
    opts = {k: v for k, v in values.items() if k in options}
    args = dict(job.spec.args)
    args.update({k: ArgSpec("constexpr", value=v) for k, v in values.items() if k not in options})
    for name in set(opts) & set(job.spec.args):  # an option that is also a parameter: both move together
        args[name] = ArgSpec("constexpr", value=opts[name])
    spec = KernelSpec(job.spec.kernel, job.spec.file, job.spec.fn, args)
    return Job(spec, job.settings.overlay(opts, source), job.label)


def _load_kernels(file, kernels: list[str], doc: SpecFile | None, target: Target) -> list[loader.KernelRef]:
    if doc is None or not (doc.get("launch") or {}).get("script"):
        return loader.select_kernels(file, kernels or None)
    # a captured script's module code may ask Triton's driver for a GPU while it loads: on a
    # machine without the capture's GPU it loads on the stand-in GPU of the target, as the capture did.
    # Imported here, like the recipe reader below: a plain dump's start-up pays for neither (LAZY in
    # tests/test_architecture.py lists these two exceptions).
    from irscope.standin.gpu import machine_unless_local

    with machine_unless_local(target):
        return loader.select_kernels(file, kernels or None)


def _recipe(name: str | None, variant: str | None) -> Recipe | None:
    """The recipe named on the command line, read and checked (its variant too), or None."""
    if not name and not variant:
        return None
    from irscope.steer import (
        recipes,  # finding and reading TOML: only when a recipe is named
    )

    return recipes.resolve(name, variant)


def _with_recipe_constexprs(
    ref, signature: str | None, named_args: list[str], consts: list[str], pins: Pins
) -> tuple[str | None, list[str], list[str]]:
    """Add the recipe's constexprs the command line leaves open (the command line wins).

    A --signature may then stop before the constexprs the recipe gives: its elements are handed
    on by name. Constexprs the command line also gives are recorded in pins.overridden (shown as
    'overridden' in the summary).
    """
    if not pins.constexprs:
        return signature, named_args, consts
    params = [p.name for p in adapter.kernel_params(ref.fn)]
    elements = split_signature(signature) if signature is not None else []
    given = {p: el.strip() for p, el in zip(params, elements)}
    for item in named_args + consts:
        k, _, v = item.partition("=")
        given[k.strip()] = v.strip()
    extra = []
    for name, c in pins.constexprs.items():
        if name in given:
            pins.overridden[name] = given[name]
        else:
            extra.append(f"{name}={c.text}")
    named = list(named_args)
    if signature is not None and extra and len(elements) < len(params):
        named = [f"{p}={el.strip()}" for p, el in zip(params, elements)] + named
        signature = None
    return signature, named, extra + consts


def check_loop_pins_fit(jobs: list[Job], pin_loops: tuple[str, ...]) -> None:
    """A --pin-loop LINE must lie inside one of the kernels compiled (else it pins nothing)."""
    if not pin_loops:
        return
    from irscope.steer.pins import (  # as in for_kernel: only when pins are given
        parse_pin_loop,
        same_file,
    )

    for text in pin_loops:
        pin = parse_pin_loop(text)
        if pin.line is None:
            continue
        spans = []
        inside = False
        for job in jobs:
            span = _kernel_lines(job.spec.fn)
            if span is None or (pin.file and not same_file(job.spec.file, pin.file)):
                inside = True  # another file (a helper): only the compile can tell
                continue
            spans.append(f"{job.spec.kernel}: lines {span[0]}-{span[1]}")
            inside = inside or span[0] <= pin.line <= span[1]
        if not inside:
            raise BadInput(
                f"--pin-loop {text}: line {pin.line} is in none of the kernels compiled ({'; '.join(spans)})"
            )


def _kernel_lines(fn) -> tuple[int, int] | None:
    start = getattr(fn, "starting_line_number", None)
    raw = getattr(fn, "raw_src", None)
    if start is None or raw is None:
        return None
    return start, start + len(raw) - 1
