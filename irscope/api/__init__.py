"""irscope's Python API: what the commands do, called from Python (a notebook, a test, a script).

    irscope.dump(kernel, ...)    -> Dump       irscope dump FILE --signature ... (one kernel, one settings)
    irscope.diff(a, b)           -> Diff       irscope diff DIR_A DIR_B
    irscope.capture(fn, *args)   -> Capture    irscope capture SCRIPT, for one call instead of a script
    irscope.sweep(kernel, ...)   -> Sweep      irscope sweep FILE --axis ... (compiles only)
    irscope.profile(kernel, ...) -> Dump       irscope profile FILE --args ... --grid ... (its .profile)

Each builds a jobs.Request from its arguments and calls the same functions as the command
(compile/dump.dump_jobs, compare/command, capture/command.run_call, sweep/command, profile/command): one job model, one
pipeline. Bad input raises irscope.BadInput with the command's one-line message; a compiler failure
raises irscope.CompileFailure naming the stage. Nothing is printed. Loaded on first use of
irscope.dump & co. (irscope/__init__.py), so `import irscope` stays cheap.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from irscope import jobs
from irscope.api.results import Capture, Diff, Dump, Stages, Sweep
from irscope.capture import command as capture_command
from irscope.compare import command as diff_command
from irscope.compile import cache
from irscope.compile import dump as dump_job
from irscope.errors import BadInput, CompileFailure
from irscope.kernel import inputs, loader
from irscope.profile import command as profile_command
from irscope.sweep import command as sweep_command

Kernel = Any  # a @triton.jit / @gluon.jit function (or one under @triton.autotune), or a file path
Elements = str | Iterable[str]


def default_out() -> Path:
    """Where dumps go with out=None: `api-out/` in irscope's cache folder ($IRSCOPE_CACHE_DIR, else
    $XDG_CACHE_HOME/irscope, else ~/.cache/irscope). Folders there are keyed by kernel, target and settings,
    never overwritten by another dump, and may be removed with the cache."""
    return cache.cache_dir() / "api-out"


def dump(
    kernel: Kernel,
    *,
    name: str | None = None,
    signature: Elements | None = None,
    args: Mapping[str, str] | None = None,
    const: Mapping[str, Any] | None = None,
    target: str | None = None,
    set: Mapping[str, Any] | None = None,
    recipe: str | None = None,
    variant: str | None = None,  # noqa: A002
    pin_layout: Elements = (),
    pin_loop: Elements = (),
    pin_partition: Elements = (),
    passes: bool = False,
    cache: bool = True,
    out: str | os.PathLike | None = None,
) -> Dump:
    """Compile one kernel for one launch specialization and settings: `irscope dump`.

    kernel     the @triton.jit / @gluon.jit function object, or the path of its file (then `name`
               picks the kernel when the file has several)
    signature  the positional specialization, as --signature: "*fp16:16, i32:16, ..., 128" (or a list)
    args       by name, as --arg: {"n_elements": "i32:16"};  const: {"BLOCK_SIZE": 1024}, as --const
    target     "h100", "cuda:90", "mi300x", ... (default: the recipe's, the local GPU's, else cuda:90)
    set        compile options, as --set: {"num_warps": 8, "num_stages": 4}
    recipe, variant, pin_layout, pin_loop, pin_partition   as --recipe, --variant, --pin-*
    passes     also record the IR after every MLIR pass (--passes);  cache=False: --no-cache
    out        the output folder (as -o); None: default_out(), under irscope's cache folder

    Returns the Dump. BadInput (the CLI's message) for bad input, CompileFailure for a compile that fails.
    """
    req = _request(
        kernel, name, signature, args, const, target, set, recipe, variant, pin_layout, pin_loop, pin_partition
    )
    if not req.has_specialization and not req.is_spec_file and not req.loaded:
        raise BadInput(
            f"{req.file}: give a specialization (signature=, or args=/const=); to run a function "
            f"and dump what it compiles, use irscope.capture(fn, ...)"
        )
    folder = _out(out)
    [result] = dump_job.dump_jobs([jobs.resolve_one(req, "irscope.dump compiles")], folder, passes, cache)
    return Dump(result.folder, result.manifest, result.cached)


def diff(
    a: Dump | str | os.PathLike,
    b: Dump | str | os.PathLike,
    *,
    stages: Elements = (),
    raw: bool = False,
    by_line: bool = False,
    context: int = 3,
) -> Diff:
    """Compare two dumps of one kernel (Dumps, or dump folders): `irscope diff A B`.

    stages   the stages whose unified diff the JSON carries (as --stage; Diff.stage(name) gives any)
    raw      compare the compiler's own text (--raw), not the normalised text
    by_line  also say per Python line what changed (--by-line; the JSON's "by_line")

    Returns the Diff (its .json is what `irscope diff A B --json` prints). BadInput for folders that are
    not dumps, or dumps of different kernels.
    """
    _typed("irscope.diff", stages=(stages, _ELEMENTS), raw=(raw, bool), by_line=(by_line, bool), context=(context, int))
    if context < 0:
        raise BadInput(f"irscope.diff: context={context}; give 0 or more lines of context (as --context)")
    run = diff_command.run(
        diff_command.DiffOptions(
            jobs.Request(_folder(a)), dir_b=_folder(b), stages=tuple(_items(stages)), raw=raw, by_line=by_line
        )
    )
    return Diff(run.result, context)


def capture(fn: Callable[..., Any], *args: Any, target: str | None = None, **kwargs: Any) -> Capture:
    """Call fn(*args, **kwargs) and dump every Triton kernel the call compiles: `irscope capture SCRIPT`,
    for one call. Without a GPU, or for another target, the call runs on irscope's stand-in GPU
    (tensors made for "cuda" live on the CPU, launches are recorded, compiled for the target and
    computed by Triton's interpreter, as for a script); on the local GPU's own target it runs for real.

    target   "h100", "cuda:90", ... (default: the local GPU, else cuda:90). Every other keyword goes to fn.
    Dumps go to default_out().

    Returns the Capture: a list of Dump (one per kernel × config compiled), with .stopped (fn's
    exception, one line, when it raised after a launch), .value (what fn returned) and .notes.
    BadInput when the call launched no kernel (chained to fn's exception if it raised).
    """
    if not callable(fn):
        raise BadInput(f"{fn!r}: not callable; irscope.capture(fn, *args, **kwargs) calls fn")
    code = getattr(fn, "__code__", None)
    req = jobs.Request(Path(code.co_filename if code is not None else "<call>"), target=target)
    folder = _out(None)
    run, value = capture_command.run_call(req, fn, args, kwargs, capture_command.CaptureOptions(folder))
    return Capture(run, value)


def sweep(
    kernel: Kernel,
    *,
    grid: Mapping[str, Iterable[Any] | str],
    name: str | None = None,
    signature: Elements | None = None,
    args: Mapping[str, str] | None = None,
    const: Mapping[str, Any] | None = None,
    target: str | None = None,
    set: Mapping[str, Any] | None = None,
    recipe: str | None = None,
    variant: str | None = None,  # noqa: A002
    workers: int | None = None,
    sort: str = "config",
    out: str | os.PathLike | None = None,
) -> Sweep:
    """Compile every config of a grid of options or constexprs: `irscope sweep FILE --axis ...` (no
    timing). grid: {"num_warps": [4, 8], "num_stages": "2..4"} (a list, or the --axis range text);
    workers: compile processes (default: the cores); the kernel must be in a file the workers can load.
    Returns the Sweep, its configs in the table's order (sort as --sort)."""
    _typed("irscope.sweep", grid=(grid, Mapping), workers=(workers, (int, type(None))), sort=(sort, str))
    if not isinstance(kernel, (str, os.PathLike)):
        kernel = loader.kernel_ref(kernel)
        name, kernel = name or kernel.name, kernel.file  # the workers load the file
    req = _request(kernel, name, signature, args, const, target, set, recipe, variant, (), (), ())
    axes = tuple(f"{k}={v if isinstance(v, str) else ','.join(_text(x) for x in v)}" for k, v in grid.items())
    opts = sweep_command.SweepOptions(_out(out), axes=axes, jobs=workers, sort_key=sort, no_db=True)
    prepared = sweep_command.prepare(req, opts, lambda: None)
    done = sweep_command.run(prepared, lambda what, total=None: contextlib.nullcontext(lambda *a: None))
    return Sweep(done, title=prepared.base.spec.kernel)


def profile(
    kernel: Kernel,
    *,
    launch: str | None = None,
    grid: str | None = None,
    name: str | None = None,
    signature: Elements | None = None,
    args: Mapping[str, str] | None = None,
    const: Mapping[str, Any] | None = None,
    target: str | None = None,
    set: Mapping[str, Any] | None = None,
    recipe: str | None = None,
    variant: str | None = None,  # noqa: A002
    tool: str = "auto",
    passes: bool = False,
    seed: int = 0,
    cache: bool = True,
    out: str | os.PathLike | None = None,
) -> Dump:
    """Run the kernel once on this machine's GPU under Nsight Compute (or Proton's PC sampling where ncu
    is missing) and join what it measured to the dump's Python lines: `irscope profile FILE --args ...`.

    launch   the launch's arguments, as --args: "x=randn(4096, fp32), y=randn(4096, fp32), n=4096"
             (a capture spec file brings its own);  grid: as --grid, "cdiv(n, BLOCK)"
    tool     "auto" (ncu where it is on PATH), "ncu" or "proton";  passes: name the passes behind the
             hottest lines' ops;  seed: the random inputs' seed
    the rest as irscope.dump. Returns the Dump, whose .profile is the profile.json written into it (hot
    lines, stall reasons, bytes, the measured roofline point). BadInput without a GPU (nothing is
    simulated), for a target other than the local GPU's, or when the profiler fails.
    """
    _typed("irscope.profile", launch=(launch, _OPT_STR), grid=(grid, _OPT_STR), tool=(tool, str), seed=(seed, int))
    req = _request(kernel, name, signature, args, const, target, set, recipe, variant, (), (), ())
    plan = profile_command.prepare(req, (), launch, grid, str(_out(out)), seed=seed, tool=tool)
    folder, _ = profile_command.run(plan, use_cache=cache, with_passes=passes)
    return Dump(folder)


def _request(
    kernel: Kernel,
    name: str | None,
    signature: Elements | None,
    args: Mapping[str, str] | None,
    const: Mapping[str, Any] | None,
    target: str | None,
    sets: Mapping[str, Any] | None,
    recipe: str | None,
    variant: str | None,
    pin_layout: Elements,
    pin_loop: Elements,
    pin_partition: Elements,
) -> jobs.Request:
    """The jobs.Request the command line would build from the same choices (checked as it checks them)."""
    _typed(
        "irscope",
        name=(name, _OPT_STR),
        signature=(signature, (str, list, tuple, type(None))),
        args=(args, (Mapping, type(None))),
        const=(const, (Mapping, type(None))),
        target=(target, _OPT_STR),
        set=(sets, (Mapping, type(None))),
        recipe=(recipe, _OPT_STR),
        variant=(variant, _OPT_STR),
        pin_layout=(pin_layout, _ELEMENTS),
        pin_loop=(pin_loop, _ELEMENTS),
        pin_partition=(pin_partition, _ELEMENTS),
    )
    named = tuple(f"{k}={v}" for k, v in (args or {}).items())
    consts = tuple(f"{k}={_text(v)}" for k, v in (const or {}).items())
    inputs.check_request_text(target, named, consts, "target=")
    loaded: tuple[loader.KernelRef, ...]
    if isinstance(kernel, (str, os.PathLike)):
        path = Path(kernel).expanduser()  # absolute when it exists: a notebook's cwd may move later
        file, loaded, names = (path.resolve() if path.exists() else path), (), ((name,) if name else ())
    else:
        ref = loader.kernel_ref(kernel)
        file, loaded, names = ref.file, (ref,), (ref.name,)
    sig = signature if signature is None or isinstance(signature, str) else ", ".join(_text(x) for x in signature)
    req = jobs.Request(
        file,
        names,
        sig,
        named,
        consts,
        target,
        recipe=recipe,
        variant=variant,
        pin_layouts=_items(pin_layout),
        pin_loops=_items(pin_loop),
        pin_partitions=_items(pin_partition),
        loaded=loaded,
    )
    return req.with_sets(tuple(f"{k}={_text(v)}" for k, v in (sets or {}).items()), "--set")


_OPT_STR = (str, type(None))
_ELEMENTS = (str, list, tuple)
_TYPE_WORDS = {str: "a str", list: "a list", tuple: "a tuple", int: "an int", bool: "True or False", Mapping: "a dict"}


def _typed(where: str, **given: tuple[Any, Any]) -> None:
    """BadInput (one line, as the CLI says a bad flag) for the first argument of the wrong type: each
    keyword is (value, the accepted type or tuple of types)."""
    for key, (value, kinds) in given.items():
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds and int in kinds)
        if not ok:
            words = " or ".join("None" if k is type(None) else _TYPE_WORDS.get(k, k.__name__) for k in kinds)
            raise BadInput(f"{where}: {key}= is {value!r:.60} ({type(value).__name__}); give {words}")


def _text(value: Any) -> str:
    """A Python value as the command line spells it (True, None, 1024, tl.float16 as tl.float16)."""
    if isinstance(value, str):
        return value
    if type(value).__name__ == "dtype" and hasattr(value, "name"):
        return f"tl.{_TL_NAMES.get(value.name, value.name)}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_text(x) for x in value) + "]"
    return str(value)


_TL_NAMES = {
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "fp64": "float64",
    "fp8e4nv": "float8e4nv",
    "fp8e5": "float8e5",
}


def _items(value: Elements) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value or ())


def _out(out: str | os.PathLike[str] | None) -> Path:
    folder = default_out() if out is None else inputs.out_path(out, "out=")
    inputs.check_output_dir(folder, "out=")
    return folder


def _folder(side: Dump | str | os.PathLike) -> Path:
    if isinstance(side, Dump):
        return side.folder
    if isinstance(side, (str, os.PathLike)):
        return Path(side)
    raise BadInput(f"{side!r}: irscope.diff compares two Dumps or two dump folders")


# irscope.capture, irscope.sweep and irscope.profile are also irscope's packages (capture/, sweep/, profile/),
# which the import system sets as attributes of `irscope` when they load (this module loads them above). The package attribute
# becomes the function; the packages stay in sys.modules, where every `from irscope.capture import ...`
# finds them (irscope imports its packages only that way: tests/test_api.py holds it to that).
_package = sys.modules["irscope"]
for _name, _function in (("capture", capture), ("sweep", sweep), ("profile", profile)):
    setattr(_package, _name, _function)

__all__ = [
    "BadInput",
    "Capture",
    "CompileFailure",
    "Diff",
    "Dump",
    "Stages",
    "Sweep",
    "capture",
    "default_out",
    "diff",
    "dump",
    "profile",
    "sweep",
]
