"""A diff's two sides and their comparison, as `irscope diff` and the Python API (irscope.diff) both get them.

    DiffOptions   what `irscope diff` was asked (built by keyword): FILE and what each side changes
                  (SideRequest: --a/--b, --a-target/--b-target, --a-variant/--b-variant), or DIR_A DIR_B
    run           DiffOptions -> DiffRun: both sides (diff_sides: compiled, or read as they are) and their
                  comparison
    file_sides    FILE and both SideRequests -> both sides dumped into one folder, or neither
    folder_sides  DIR_A DIR_B (or two dump folders the API was given) -> both sides, as they are
    compare       the comparison itself (diff.compare): stats, stages, passes, by line
    findings_diff the findings (irscope.explain) that appeared or went away between side a and side b
    profile       DIR_A DIR_B -> profiles.ProfileDiff (`irscope diff-profiles`: two measured dumps, line by line)

The CLI parses and renders around these; irscope.api wraps the result for Python. Nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from irscope import explain, jobs
from irscope.compare import diff, profiles, sides
from irscope.compare.sides import Side, SideRequest
from irscope.errors import BadInput
from irscope.explain import Finding
from irscope.kernel import inputs

compare = diff.compare


@dataclass(frozen=True)
class DiffOptions:
    """`irscope diff FILE --a ... --b ...` (file mode) or `irscope diff DIR_A DIR_B` (dir_b given, or FILE a folder)."""

    request: jobs.Request  # the shared request: FILE (or DIR_A), --set, --target, ...
    a: SideRequest = field(default_factory=lambda: SideRequest("a"))
    b: SideRequest = field(default_factory=lambda: SideRequest("b"))
    dir_b: Path | None = None
    out_dir: Path = Path("irscope-out")
    stages: tuple[str, ...] = ()  # --stage: these stages' text diffs are shown (and decide the status)
    passes: bool = False  # --passes
    by_line: bool = False  # --by-line
    raw: bool = False  # --raw: the compiler's text, not normalised
    use_cache: bool = True  # not --no-cache

    @property
    def folders(self) -> bool:
        return self.dir_b is not None or Path(self.request.file).is_dir()


@dataclass
class DiffRun:
    """What diff did: both sides (with file mode's jobs, which diff --time launches) and the comparison."""

    a: Side
    b: Side
    result: diff.DiffResult
    jobs: list[jobs.Job] = field(default_factory=list)  # empty for two dump folders


def diff_sides(opts: DiffOptions) -> tuple[Side, Side, list[jobs.Job]]:
    """Both sides of a diff: two dump folders as they are, or FILE compiled once per side."""
    if opts.folders:
        if opts.dir_b is None:
            raise BadInput(
                f"{opts.request.file}: a dump folder; give a second one to compare with (irscope diff DIR_A DIR_B)"
            )
        refuse_compile_flags(
            opts.request,
            {"--a": opts.a.sets, "--b": opts.b.sets, "--a-target": opts.a.target, "--b-target": opts.b.target},
        )
        a, b = folder_sides(opts.request.file, opts.dir_b, opts.request.kernels)
        return a, b, []
    return file_sides(opts.request, opts.a, opts.b, opts.out_dir, opts.passes, opts.use_cache)


def run(opts: DiffOptions) -> DiffRun:
    """`irscope diff`: both sides (diff_sides), then their comparison as the options ask it."""
    a, b, side_jobs = diff_sides(opts)
    result = compare(a, b, list(opts.stages), normalized=not opts.raw, require_passes=opts.passes, lines=opts.by_line)
    return DiffRun(a, b, result, side_jobs)


def file_sides(
    request: jobs.Request,
    a: SideRequest,
    b: SideRequest,
    out_dir: Path,
    with_passes: bool = False,
    use_cache: bool = True,
) -> tuple[Side, Side, list[jobs.Job]]:
    """Both sides of a kernel file compiled (or fetched from the cache) into out_dir, and their jobs
    (diff --time launches them). Every side's options are checked before either compiles; a side that
    fails leaves out_dir as it was. Each Side carries its compile's DumpResult (Side.dump)."""
    inputs.check_output_dir(out_dir)  # both sides are written there: refused before either compiles
    side_jobs = sides.side_jobs(request, (a, b))
    side_a, side_b = sides.dump_sides(side_jobs, (a, b), out_dir, with_passes, use_cache)
    return side_a, side_b, side_jobs


def folder_sides(dir_a: Path, dir_b: Path, kernels: tuple[str, ...] = ()) -> tuple[Side, Side]:
    """Two earlier dumps (a dump folder, or an -o folder holding one), read as they are; they must
    hold the same kernel."""
    side_a = sides.load_side("a", Path(dir_a), kernels)
    side_b = sides.load_side("b", Path(dir_b), kernels)
    sides.check_same_kernel(side_a, side_b)
    return side_a, side_b


def refuse_compile_flags(request: jobs.Request, given: dict[str, Any]) -> None:
    """DIR_A DIR_B compares two dumps as they are: a flag that only applies when compiling is BadInput.
    `given`: the side flags as the CLI names them (--a, --b, --a-target, --b-target) and their values."""
    flags = {
        "--set": request.sets,
        "--target": request.target,
        "--signature": request.signature,
        "--arg": request.named_args,
        "--const": request.consts,
    }
    named = [name for name, value in {**given, **flags}.items() if value]
    if named:
        raise BadInput(
            f"{', '.join(named)}: apply when compiling a kernel file; DIR_A DIR_B compares two dumps as they are"
        )


def profile(dir_a: Path, dir_b: Path, kernels: tuple[str, ...] = ()) -> profiles.ProfileDiff:
    """`irscope diff-profiles DIR_A DIR_B`: both folders read (one kernel), their profiles compared."""
    if not Path(dir_a).is_dir():
        raise BadInput(
            f"{dir_a}: not a dump folder; irscope diff-profiles compares two dump folders that "
            f"irscope profile measured (irscope diff-profiles DIR_A DIR_B)"
        )
    a, b = folder_sides(dir_a, dir_b, kernels)
    return profiles.profile_diff(a, b)


@dataclass(frozen=True)
class FindingsDiff:
    """The findings of side a against side b, matched by Finding.key (kind, line, cause); what a finding says
    (its counts, the IR it quotes, its machine lines) may change while it stays the same finding. When the
    kernel's source differs between the sides, the line's text stands for its number (lines move)."""

    appeared: list[Finding] = field(default_factory=list)  # on b, not on a
    went_away: list[Finding] = field(default_factory=list)  # on a, not on b
    both: list[tuple[Finding, Finding]] = field(default_factory=list)  # (a's, b's)
    error: str = ""  # the finding engine failed on a side: said, not hidden (the diff itself stands)

    @property
    def changed(self) -> bool:
        return bool(self.appeared or self.went_away)


def _match_key(f: Finding, by_text: bool) -> tuple[str, object, str]:
    return (f.kind, f.where.text.strip() if by_text and f.where.text.strip() else f.where.line, f.cause)


def match_findings(a: list[Finding], b: list[Finding], by_text: bool = False) -> FindingsDiff:
    """Pair a's findings with b's by key (in order, so two findings of one key pair with two); the rest
    went away (a) or appeared (b)."""
    left = list(b)
    both: list[tuple[Finding, Finding]] = []
    went: list[Finding] = []
    for fa in a:
        k = _match_key(fa, by_text)
        j = next((i for i, fb in enumerate(left) if _match_key(fb, by_text) == k), None)
        if j is None:
            went.append(fa)
        else:
            both.append((fa, left.pop(j)))
    return FindingsDiff(appeared=left, went_away=went, both=both)


def findings_diff(result: diff.DiffResult) -> FindingsDiff:
    """What irscope.explain finds on each side of a diff (read from the dump folders, no compile), matched."""
    try:
        found = [explain.findings(s.folder, s.manifest) for s in (result.a, result.b)]
    except Exception as e:  # noqa: BLE001 - a finding engine's bug must not cost the diff its output
        return FindingsDiff(error=f"{type(e).__name__}: {e}")
    return match_findings(found[0], found[1], by_text=result.sources_differ)
