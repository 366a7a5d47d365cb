"""Across two Triton releases (`irscope diff-releases`, run): one kernel's two sides compared as any diff, or a
whole capture: every DIR/captures/*.json dumped on both sides.

Each side is one worker in its env (both at once), dumping the captured spec files one after the
other; each kernel's pair of dumps is then compared by compare/diff as any diff is, and gets one
verdict:

    same            no stat and no compiled stage (TTIR onwards) differs
    stats changed   a stat differs (registers, spills, shared memory, occupancy, instruction
                    mix, MMA kind, TMA, layouts ...): which, and by how much
    code changed    the stats agree, a compiled stage's text differs
    fails on a/b    one side (or both) did not compile: the stage and reason

With per-pass IR (--passes) a changed kernel also names the first pass after which the two
releases' IR part, and the passes one release runs and the other does not (new or gone).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from irscope import jobs, stages
from irscope.artifacts import passes as passes_mod
from irscope.compare import diff as diff_mod
from irscope.compare.command import DiffOptions, DiffRun
from irscope.compare.sides import Side, SideRequest
from irscope.errors import BadInput
from irscope.kernel import inputs
from irscope.releases import envs
from irscope.releases import sides as release_sides
from irscope.releases import worker as release_worker

# what Python and Triton's front end print, not compiled code: the registry's stages before TTIR
UNCOMPILED = tuple(stages.names()[: stages.names().index("ttir")])
KEY_STATS = (
    "registers",
    "spills",
    "spill_store_bytes",
    "shared_bytes",
    "occupancy.occupancy",
    "machinery.",
    "ptx.wgmma",
    "ptx.mma.sync",
    "ptx.tcgen05.mma",
    "ptx.tma",
    "sass.classes.tma",
    "ttgir.layouts",
    "sass.classes.",
    "sass.instructions",
    "ttgir.convert_layout",
)
ORDER = {"fails on both": 0, "fails on a": 1, "fails on b": 2, "stats changed": 3, "code changed": 4, "same": 5}


@dataclass
class KernelRow:
    spec: Path
    kernel: str
    verdict: str
    stats: list[diff_mod.StatDelta] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)  # compiled stages whose text differs
    failures: dict[str, str] = field(default_factory=dict)  # side -> stage and reason
    result: diff_mod.DiffResult | None = None

    @property
    def changed(self) -> bool:
        return self.verdict in ("stats changed", "code changed")


@dataclass
class CaptureTable:
    folder: Path
    a: envs.Env
    b: envs.Env
    rows: list[KernelRow]
    passes: bool

    @property
    def exit_code(self) -> int:
        """As diff's: 2 when a kernel fails on a side (trouble), 1 when one changed, else 0."""
        if any(r.verdict.startswith("fails") for r in self.rows):
            return 2
        return 1 if any(r.changed for r in self.rows) else 0


def spec_files(folder: Path, kernels: tuple[str, ...] = ()) -> list[Path]:
    """DIR/captures/*.json (the kernel names filter them, as --kernel does)."""
    found = sorted((folder / "captures").glob("*.json"))
    if not found:
        raise BadInput(f"{folder}: no captures/*.json; capture a script first (irscope capture SCRIPT.py -o {folder})")
    if kernels:
        found = [p for p in found if _kernel_of(p) in kernels]
        if not found:
            raise BadInput(f"{folder}: no capture of {', '.join(kernels)}")
    return found


def _kernel_of(path: Path) -> str | None:
    try:
        return json.loads(path.read_text()).get("kernel")
    except (OSError, ValueError, AttributeError):
        return None


def diff_capture(  # noqa: PLR0913
    folder: Path,
    request: jobs.Request,
    tritons: tuple[str | None, str | None],
    out_dir: Path,
    with_passes: bool,
    use_cache: bool,
    by_line: bool = False,
    note: Callable[[str], None] | None = None,
    reqs: tuple[SideRequest, SideRequest] | None = None,
    selected: tuple[str, ...] = (),
    raw: bool = False,
    progress: Any = None,
) -> CaptureTable:
    """Every captured kernel dumped with both Tritons (both envs had first), compared, one row each.
    reqs: what each side changes on top (--a/--b, --a-target/--b-target, --a-variant/--b-variant);
    selected: the stages whose text diffs each row's result carries (--stage); raw: not normalised."""
    reqs = reqs or (SideRequest("a"), SideRequest("b"))
    if any(r.variant for r in reqs) and not request.recipe:
        raise BadInput("--a-variant/--b-variant name variants of a recipe: give it with --recipe")
    specs = spec_files(Path(folder), request.kernels)
    side_envs = release_sides.side_envs(tritons, note, progress=progress)
    out_dir = Path(out_dir)
    msgs = [
        [
            release_worker.message(
                release_sides.side_request(replace(request, file=p, kernels=()), req), out_dir, with_passes, use_cache
            )
            for p in specs
        ]
        for req in reqs
    ]
    results = release_worker.run_all([e.python for e in side_envs], msgs)
    labels = [release_sides.label(req, e) for req, e in zip(reqs, side_envs)]
    rows = [_row(p, ra, rb, labels, with_passes, by_line, selected, raw) for p, ra, rb in zip(specs, *results)]
    rows.sort(key=lambda r: (ORDER[r.verdict], r.spec.name))
    return CaptureTable(Path(folder), side_envs[0], side_envs[1], rows, with_passes)


def run(
    opts: DiffOptions,
    tritons: tuple[str | None, str | None],
    note: Callable[[str], None] | None = None,
    progress: Any = None,
) -> DiffRun | CaptureTable:
    """`irscope diff-releases`: a kernel file or spec file (two sides, each compiled with its Triton, compared
    as any diff) or a capture folder (every captured kernel, one row each). Both envs are had first.
    `progress(what)`: the terminal's spinner (views/progress) while envs are made and both sides dump."""
    if all(t is None for t in tritons):  # an empty --a-triton is given, and refused by envs.parse
        raise BadInput(
            "give the Triton of side a and/or side b: --a-triton RELEASE, --b-triton RELEASE "
            "(a side without one uses the running Triton)"
        )
    inputs.check_output_dir(opts.out_dir)  # both sides are written there: refused before either compiles
    what = "compiling with " + " and ".join(t or "the running Triton" for t in tritons)
    with progress(what) if progress else contextlib.nullcontext():
        return _run(opts, tritons, note, progress)


def _run(
    opts: DiffOptions, tritons: tuple[str | None, str | None], note: Callable[[str], None] | None, progress: Any
) -> DiffRun | CaptureTable:
    if Path(opts.request.file).is_dir():
        return diff_capture(
            opts.request.file,
            opts.request,
            tritons,
            opts.out_dir,
            opts.passes,
            opts.use_cache,
            opts.by_line,
            note,
            (opts.a, opts.b),
            opts.stages,
            opts.raw,
            progress,
        )
    envs_ = release_sides.side_envs(tritons, note=note, progress=progress)
    a, b = release_sides.dump_sides(opts.request, (opts.a, opts.b), envs_, opts.out_dir, opts.passes, opts.use_cache)
    result = diff_mod.compare(
        a, b, list(opts.stages), normalized=not opts.raw, require_passes=opts.passes, lines=opts.by_line
    )
    return DiffRun(a, b, result)


def _row(
    spec: Path,
    ra: dict[str, Any],
    rb: dict[str, Any],
    labels: list[str],
    with_passes: bool,
    by_line: bool,
    selected: tuple[str, ...] = (),
    raw: bool = False,
) -> KernelRow:
    kernel = _kernel_of(spec) or spec.stem
    failures = {name: _failure(r) for name, r in (("a", ra), ("b", rb)) if r.get("status") != "ok"}
    if failures:
        verdict = "fails on both" if len(failures) == 2 else f"fails on {next(iter(failures))}"
        return KernelRow(spec, kernel, verdict, failures=failures)
    a = release_sides.to_side("a", labels[0], ra)
    b = release_sides.to_side("b", labels[1], rb)
    result = diff_mod.compare(a, b, list(selected), normalized=not raw, require_passes=with_passes, lines=by_line)
    changed = sorted(result.stats.deltas, key=_stat_rank)
    differ = [s.stage for s in result.stages if not s.equal and s.stage not in UNCOMPILED]
    verdict = "stats changed" if changed else "code changed" if differ else "same"
    return KernelRow(spec, kernel, verdict, changed, differ, result=result)


def _failure(result: dict[str, Any]) -> str:
    return release_sides.failure_text(result)


def _stat_rank(delta: diff_mod.StatDelta) -> tuple[int, str]:
    for i, key in enumerate(KEY_STATS):
        if delta.name == key or (key.endswith(".") and delta.name.startswith(key)):
            return i, delta.name
    return len(KEY_STATS), delta.name


def first_pass(row: KernelRow) -> dict[str, Any] | None:
    """Why it changed: the first pass after which the IR parts, and the passes new or gone in b."""
    result = row.result
    passes = result.passes if result is not None else None
    if result is None or passes is None:
        return None
    div = passes.divergence
    names = [pass_names(side) for side in (result.a, result.b)]
    return {
        "where": div.where,
        "stage": div.stage,
        "pass": div.name,
        "new_in_b": [n for n in names[1] if n not in names[0]],
        "gone_in_b": [n for n in names[0] if n not in names[1]],
    }


def pass_names(side: Side) -> dict[str, None]:
    """The passes a side ran, in order, once each, by the name releases agree on (compare.diff.pass_key)."""
    records, _, _ = passes_mod.load(side.folder, side.manifest)
    return dict.fromkeys(diff_mod.pass_key(r.name) for r in records)


def sides_of(row: KernelRow) -> tuple[Side, Side] | None:
    return (row.result.a, row.result.b) if row.result is not None else None
