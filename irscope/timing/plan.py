"""What to time: the variants (jobs) and the launch they share, from a request.

bench: the baseline (or one variant per recipe --variant), an --aa copy, and one variant per --try
on top of the baseline; diff --time: side a against side b; sweep --time: the launch alone. The
launch comes from --args/--grid (data: launch.py's grammar) or a capture spec file's launch record.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from irscope import jobs
from irscope.errors import BadInput
from irscope.kernel import loader
from irscope.kernel.settings import parse_assignments
from irscope.kernel.specfile import read_spec_document
from irscope.kernel.targets import local_gpu_target
from irscope.records import Launch as LaunchRecord
from irscope.timing.launch import (
    Launch,
    from_capture,
    parse_args,
    parse_grid,
    spec_element,
)
from irscope.timing.variant import Variant


def launch_request(
    request: jobs.Request, launch_args: str | None
) -> tuple[jobs.Request, dict[str, Any], LaunchRecord | None]:
    """(the request with --args' scalars and constexprs as its specialization, the launch values, the spec
    file's launch record): with --args and no --signature/--arg, the launch itself specializes the kernel."""
    record = None
    if request.is_spec_file:
        record = read_spec_document(request.file).get("launch") or None
    if launch_args:
        values = parse_args(launch_args)
    elif record:
        values = from_capture(record).args
    else:
        raise BadInput(
            'bench needs launch arguments: --args "x=randn(4096, fp32), n=4096, ..." and --grid, '
            "or a capture spec file with a launch record"
        )
    if launch_args and not (request.signature or request.named_args):
        ref = loader.select_kernels(request.file, list(request.kernels) or None)[0]
        param_names = [p.name for p in ref.fn.params]
        constexpr = {p.name for p in ref.fn.params if p.is_constexpr}
        named = tuple(f"{k}={spec_element(v)}" for k, v in values.items() if k in param_names and k not in constexpr)
        consts = tuple(f"{k}={v}" for k, v in values.items() if k in constexpr)
        request = replace(
            request, named_args=request.named_args + named, consts=request.consts + consts, kernels=(ref.name,)
        )
    return request, values, record


def launch_for(job: jobs.Job, values: dict[str, Any], grid: str | None, record: LaunchRecord | None) -> Launch:
    """The launch: --grid evaluated over the arguments and the job's constexprs, else the recorded grid."""
    env = dict(values)
    env.update({name: a.value for name, a in job.spec.args.items() if a.kind == "constexpr"})
    if grid:
        launch_grid = parse_grid(grid, env)
    elif record and (recorded := record.get("grid")):  # a launch's grid: 1 to 3 entries
        launch_grid = cast("tuple[int, int, int]", tuple(list(recorded) + [1] * (3 - len(recorded))))
    else:
        raise BadInput('bench needs --grid (e.g. --grid "cdiv(n, BLOCK)")')
    return Launch(values, launch_grid, grid_expr=grid)


def bench_variants(
    request: jobs.Request,
    variant_names: tuple[str, ...],
    launch_args: str | None,
    grid: str | None,
    tries: tuple[str, ...] = (),
    aa: bool = False,
) -> tuple[list[Variant], Launch]:
    """Baseline (or one per recipe variant, the first the baseline), --aa, then each --try on the baseline."""
    request, values, record = launch_request(request, launch_args)
    base_jobs = jobs.variants(request, variant_names)
    if len({j.spec.kernel for j in base_jobs}) != 1:
        raise BadInput("bench times one kernel at a time: pick it with --kernel")
    base = base_jobs[0]
    launch = launch_for(base, values, grid, record)
    variants = [Variant(j.label or "baseline", j.spec, j.settings) for j in base_jobs]
    if aa:
        variants.append(Variant("baseline (A/A copy)", base.spec, base.settings))
    for t in tries:
        extra = parse_assignments([x for x in t.split(",") if x.strip()], base.settings.target, source="--try")
        tried = jobs.vary(base, extra, "--try")
        variants.append(Variant(", ".join(f"{k}={v}" for k, v in extra.items()), tried.spec, tried.settings))
    return variants, launch


def side_variants(
    side_jobs: list[jobs.Job], labels: tuple[str, str], request: jobs.Request, launch_args: str | None, grid: str | None
) -> tuple[list[Variant], Launch]:
    """diff --time: side a (the baseline) and side b, on the local GPU's target only."""
    local = local_gpu_target()
    variants = []
    for name, job, label in zip("ab", side_jobs, labels):
        if local is None or job.settings.target != local:
            raise BadInput(
                f"--time: side {name} compiles for {job.settings.target.name} but this machine's GPU is "
                f"{local.name if local else 'unknown'}; timing needs the local target"
            )
        variants.append(Variant(f"{name}: {label or 'shared settings'}", job.spec, job.settings))
    _, launch = bench_variants(request, (), launch_args, grid)
    return variants, launch
