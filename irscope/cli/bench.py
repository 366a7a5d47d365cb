"""`irscope bench`: time variants of a kernel on this machine's GPU."""

from __future__ import annotations

import click

from irscope.cli.options import spec_options, timing_session

DUTY_OPTION = click.option(  # bench's and sweep's
    "--duty",
    type=click.FloatRange(0.05, 1.0),
    default=0.5,
    show_default=True,
    help="Fraction of the timing rounds the GPU is busy; the rest idle, so large kernels are timed below the "
    "power limit, as a launch in a burst runs (1.0: back to back, the sustained regime).",
)


@click.command()
@spec_options
@click.option(
    "--args",
    "launch_args",
    metavar="ARGS",
    help='Launch arguments: "x=randn(4096, fp32), n=4096, ..." (see irscope/timing/launch.py).',
)
@click.option("--grid", metavar="EXPR", help='Grid over the arguments and constexprs: "cdiv(n, BLOCK)".')
@click.option(
    "--try",
    "tries",
    multiple=True,
    metavar="KEY=VALUE[,KEY=VALUE]",
    help="Another variant: these options on top of the baseline's (repeatable).",
)
@click.option("--aa", is_flag=True, help="Add a copy of the baseline as a variant (an A/A check of the noise).")
@click.option(
    "--ref",
    "ref_text",
    metavar="CALL",
    help="What a user would call instead, timed in the same rounds: a torch call over the --args names, "
    'e.g. "torch.matmul(a_ptr, b_ptr)" or "F.softmax(x_ptr, -1)" (irscope/timing/reference.py).',
)
@click.option(
    "--margin",
    type=float,
    default=0.01,
    show_default=True,
    help="Equivalence margin of the verdicts (a fraction): within it is 'same', beyond it 'faster' or "
    "'slower', straddling it 'ambiguous'. Never below one timer tick of the kernel.",
)
@click.option("--flops", metavar="EXPR", help='FLOPs per launch, e.g. "2*M*N*K": gives TFLOP/s and % of peak.')
@click.option("--bytes", "nbytes", metavar="EXPR", help="Bytes moved per launch: gives GB/s and % of peak.")
@click.option(
    "--precision",
    type=float,
    default=0.005,
    show_default=True,
    help="Stop once every ratio's 95% CI half-width is within this fraction.",
)
@click.option("--max-seconds", type=float, default=20.0, show_default=True, help="Time budget for the rounds.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option(
    "--graph",
    type=click.Choice(["off", "on", "auto"]),
    default="off",
    show_default=True,
    help="Time inside CUDA graphs: one replay a round holds every variant's runs, 2n graphs (each "
    "rotation of the variants and its mirror) in rotation. Off: CUDA events around each run, one "
    "run of each variant a round. Auto keeps events.",
)
@click.option(
    "--batch",
    "batch_text",
    default="auto",
    show_default=True,
    metavar="auto|N",
    help="Launches back to back in one timed sample: auto batches kernels under 20 us (K = 50 us over "
    "the kernel's time); N forces it; 1 turns it off (each launch after its own restore and flush: "
    "use it for kernels that read what they write, e.g. atomics into an output).",
)
@DUTY_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable document instead.")
def bench(
    request,
    variants,
    out_dir,
    no_cache,
    debug,
    launch_args,
    grid,
    tries,
    aa,
    ref_text,
    margin,
    flops,
    nbytes,
    precision,
    max_seconds,
    seed,
    graph,
    batch_text,
    duty,
    as_json,
):
    """Time variants of a kernel on this machine's GPU: interleaved, L2-flushed, with confidence intervals."""
    from irscope.timing import bench as bench_job
    from irscope.timing.plan import bench_variants
    from irscope.timing.reference import parse as parse_ref
    from irscope.views import bench as view
    from irscope.views.progress import reporter

    bench_job.check_margin(margin)
    batch = bench_job.parse_batch(batch_text)
    # every input is checked before the GPU is asked for (a bad --ref is bad input on any machine); the
    # timing process still starts before anything compiles (bench_job.run compiles), so it comes up meanwhile
    timed, launch = bench_variants(request, variants, launch_args=launch_args, grid=grid, tries=tries, aa=aa)
    ref = parse_ref(ref_text, launch) if ref_text is not None else None
    session = timing_session()
    result = bench_job.run(
        timed,
        launch,
        seed=seed,
        flops=flops,
        nbytes=nbytes,
        precision=precision,
        max_seconds=max_seconds,
        graph=graph,
        duty=duty,
        session=session,
        ref=ref,
        margin=margin,
        batch=batch,
        progress=reporter(enabled=not as_json),
    )
    if as_json:
        click.echo(view.bench_json(result))
    else:
        view.bench_summary(result)
