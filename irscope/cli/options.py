"""The options the commands share (`@spec_options`, `@script_options` for capture), handed to the command as
`request` (one jobs.Request) and `variants` (the --variant names), checked (kernel/inputs.py) before any load."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import click

from irscope import stages

STAGE_CHOICES = list(stages.CHOICES)

LOAD_TIMEOUT_OPTION = click.option(
    "--load-timeout",
    metavar="SECONDS",
    type=click.FloatRange(0, 86400, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds a kernel file may take to import (a file that loops at import is refused).",
)


def _keep_locs(ctx, param, value):
    from irscope.views.console import configure

    configure(locs=value)


LOCS_OPTION = click.option(
    "--locs",
    is_flag=True,
    expose_value=False,
    callback=_keep_locs,
    help="With --stage: keep the loc(...) locations of an MLIR stage (TTIR, TTGIR), hidden by default.",
)


def spec_options(f):
    """The options every command that compiles a kernel shares: the command receives them as `request` (one
    jobs.Request) and `variants` (the --variant names, in order)."""
    return _shared_options(f, specialization=True)


def script_options(f):
    """spec_options without the specialization (--signature/--arg/--const): `irscope capture SCRIPT`, whose
    kernels are specialized by the script's own launches; --kernel filters them by name."""
    return _shared_options(f, specialization=False)


def _shared_options(f, specialization: bool):
    decorators = [
        click.argument(
            "file", type=click.Path(path_type=Path, dir_okay=True), metavar="FILE" if specialization else "SCRIPT"
        ),
        click.option(
            "--kernel",
            "-k",
            "kernels",
            multiple=True,
            metavar="NAME",
            help="Kernel to compile (repeatable). Default: the file's only kernel."
            if specialization
            else "Only the kernels so named (a glob; repeatable). Default: every kernel the script compiles.",
        ),
        *(_SPECIALIZATION if specialization else ()),
        *_COMMON,
    ]
    return functools.reduce(lambda g, d: d(g), reversed(decorators), _into_request(f))


# the options after the specialization, the same for every command that compiles
_COMMON = (
    click.option(
        "--target",
        "-t",
        metavar="TARGET",
        help="cuda:80|90|100|120, hip:gfx90a|gfx942|gfx950, or a100, h100, h200, b200, rtx5090, "
        "mi250x, mi300x, mi355x. Default: the local GPU, else cuda:90.",
    ),
    click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="KEY=VALUE",
        help="A compile option of the installed Triton's backend, e.g. num_warps=8 (repeatable).",
    ),
    click.option(
        "--out",
        "-o",
        "out_dir",
        type=click.Path(),
        default="irscope-out",
        show_default=True,
        help="Folder for the dump.",
    ),
    LOAD_TIMEOUT_OPTION,
    click.option("--no-cache", is_flag=True, help="Compile even if an identical dump is cached."),
    click.option("--debug", is_flag=True, help="Show tracebacks."),
    click.option(
        "--recipe",
        "-r",
        metavar="NAME|PATH",
        help="A recipe (recipes/NAME.toml or a path): target, options, env knobs, constexprs and pins; "
        "alone it selects the target. See irscope recipes list.",
    ),
    click.option(
        "--variant",
        "variants",
        multiple=True,
        metavar="NAME",
        help="A named variant of the --recipe (e.g. deep-pipeline); repeat it to get one compile "
        "(dump) or one timed variant (bench) per variant.",
    ),
    click.option(
        "--pin-layout",
        "pin_layouts",
        multiple=True,
        metavar="ALIAS=LAYOUT|ALIAS:FIELD=VALUE",
        help="Replace a TTGIR layout: 'blocked=#ttg.blocked<{...}>', or edit fields: "
        "'blocked:sizePerThread=[1]' (repeatable).",
    ),
    click.option(
        "--pin-loop",
        "pin_loops",
        multiple=True,
        metavar="[FILE:]LINE:KEY=VALUE",
        help="Per-loop attributes of the loop at a source line: '33:num_stages=4', "
        "'examples/softmax.py:15:num_stages=1', '*:num_stages=2'; keys num_stages, "
        "loop_unroll_factor, warp_specialize, flatten, disallow_acc_multi_buffer (repeatable).",
    ),
    click.option(
        "--pin-partition",
        "pin_partitions",
        multiple=True,
        metavar="workerN:registers=R",
        help="Register budget of a warp-specialized worker partition: 'worker0:registers=48' "
        "(a multiple of 8, 24-256; checked in TTGIR and PTX's setmaxnreg; repeatable).",
    ),
)


_SPECIALIZATION = (
    click.option(
        "--signature",
        "-s",
        metavar="SIG",
        help='Positional specialization, Triton AOT style: "*fp16:16, i32, i32:16, 128".',
    ),
    click.option(
        "--arg",
        "named_args",
        multiple=True,
        metavar="NAME=TYPE",
        help="One argument by name, e.g. --arg n=i32:16 or --arg x_ptr=*fp32:4.",
    ),
    click.option(
        "--const", "consts", multiple=True, metavar="NAME=VALUE", help="A constexpr by name, e.g. --const BLOCK=1024."
    ),
)

_REQUEST_KEYS = (
    "file",
    "kernels",
    "signature",
    "named_args",
    "consts",
    "target",
    "sets",
    "recipe",
    "variants",
    "pin_layouts",
    "pin_loops",
    "pin_partitions",
)


def _into_request(f):
    """Gather the shared options into one jobs.Request (the first --variant in it; all in `variants`)."""

    @functools.wraps(f)
    def run(**kwargs):
        from irscope.jobs import Request
        from irscope.kernel import inputs

        for absent, value in (("signature", None), ("named_args", ()), ("consts", ())):  # script_options
            kwargs.setdefault(absent, value)
        kwargs["out_dir"] = inputs.take_shared(  # checked before any loading
            kwargs.pop("load_timeout"), kwargs["out_dir"], kwargs["target"], kwargs["named_args"], kwargs["consts"]
        )
        given = {k: kwargs.pop(k) for k in _REQUEST_KEYS}
        variants = tuple(given.pop("variants") or ())
        sets = tuple(given.pop("sets") or ())
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in given.items()}
        request = Request(**fields, variant=variants[0] if variants else None).with_sets(sets, "--set")
        return f(request=request, variants=variants, **kwargs)

    return run


def timing_session():
    """Start the timing process now, so torch and the CUDA context come up while irscope compiles."""
    from irscope.timing.bench import TimingSession, require_gpu

    session = TimingSession()  # first: every moment counts on its way to a CUDA context
    click.get_current_context().call_on_close(session.close)
    require_gpu()
    return session


def dump_results(request, variants, out_dir, no_cache: bool, with_passes: bool, as_json: bool = False) -> list:
    """The dump results of a kernel file (one per kernel and --variant), for the commands that read dumps;
    their progress on a terminal's stderr (not with --json)."""
    from irscope import jobs
    from irscope.compile import dump as dump_job
    from irscope.kernel.inputs import check_output_dir
    from irscope.views.progress import reporter

    check_output_dir(out_dir)
    todo = jobs.variants(request, variants)
    return dump_job.dump_jobs(todo, out_dir, with_passes, not no_cache, progress=reporter(enabled=not as_json))


def recorder():
    """The direct mode's Recorder irscope.entry handed the CLI (click's obj), else one that records nothing."""
    from irscope.direct import Recorder

    obj = click.get_current_context().obj
    return obj if isinstance(obj, Recorder) else Recorder(None)
