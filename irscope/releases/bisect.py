"""`irscope bisect`: the first Triton release between a good and a bad one where a predicate turns true.

The releases are the index's (envs.index_versions), in order, from --good to --bad (final releases
only: no rc, dev or post). The predicate is data, parsed by a tiny grammar (never evaluated as Python):

    STAT OP NUMBER      a stat of the compiled kernel: registers > 168, spills > 0,
                        occupancy.occupancy < 0.5, sass.classes.mma == 0 (OP: > >= < <= == !=)
    STAGE changed       the stage's text (normalised, as diff compares it) differs from --good's
    STAT changed        the stat differs from --good's
    compile fails       the kernel does not compile

Each release tried is dumped by a worker in its env (made on demand). A release the kernel cannot
compile on is skipped and said (unless the predicate is `compile fails`). Once the first bad
release is found, it and the last good one are dumped with per-pass IR and the first pass after
which their IR part is named (compare.diff.diff_passes, passes matched by name).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from irscope import jobs, stages
from irscope.compare import diff as diff_mod
from irscope.compare.sides import Side
from irscope.errors import BadInput
from irscope.releases import envs
from irscope.releases import sides as release_sides
from irscope.releases import worker as release_worker

OPS = {
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
}
_COMPARE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(>=|<=|==|!=|>|<)\s*(-?\d+(?:\.\d+)?)\s*$")
_CHANGED = re.compile(r"^\s*([A-Za-z_][\w.]*)\s+changed\s*$")
_FINAL = re.compile(r"^\d+\.\d+\.\d+$")


@dataclass(frozen=True)
class Predicate:
    kind: str  # "compare" | "stage changed" | "stat changed" | "compile fails"
    name: str = ""  # the stat or stage
    op: str = ""
    value: float = 0.0
    text: str = ""

    def __str__(self) -> str:
        return self.text


def parse_predicate(text: str) -> Predicate:
    """--when's text -> a Predicate; BadInput (one line) for anything else."""
    t = " ".join(text.split())
    if t.lower() == "compile fails":
        return Predicate("compile fails", text=t)
    if m := _COMPARE.match(t):
        return Predicate("compare", m.group(1), m.group(2), float(m.group(3)), t)
    if m := _CHANGED.match(t):
        name = m.group(1)
        kind = "stage changed" if name in stages.names(text=True) else "stat changed"
        return Predicate(kind, name, text=t)
    raise BadInput(
        f"--when {text!r}: expected STAT OP NUMBER (registers > 168), STAGE changed (ptx changed), "
        f"STAT changed, or compile fails"
    )


@dataclass
class Step:
    release: str
    verdict: str  # "good" | "bad" | "skipped"
    figure: str = ""  # the stat's value, or what changed, or why it was skipped
    side: Side | None = None


@dataclass
class Bisection:
    predicate: Predicate
    releases: list[str]
    steps: list[Step] = field(default_factory=list)
    first_bad: str | None = None
    last_good: str | None = None
    untested: list[str] = field(default_factory=list)  # skipped between last good and first bad
    divergence: diff_mod.Divergence | None = None
    passes_note: str = ""


def releases_between(good: str, bad: str, dist: str = "triton") -> list[str]:
    """The index's final releases from good to bad, in order, both ends included."""
    versions = [v for v in envs.index_versions(dist) if _FINAL.match(v)]
    for v, flag in ((good, "--good"), (bad, "--bad")):
        if v not in versions:
            raise BadInput(
                f"{flag} {v}: not a release of {dist} on the package index (there: {', '.join(versions[-8:])})"
            )
    lo, hi = envs.version_key(good), envs.version_key(bad)
    if lo >= hi:
        raise BadInput(f"--good {good} must be an older release than --bad {bad}")
    return [v for v in versions if lo <= envs.version_key(v) <= hi]


def run(
    request: jobs.Request,
    good: str,
    bad: str,
    predicate: Predicate,
    out_dir: Path,
    use_cache: bool,
    note: Callable[[str], None] | None = None,
    progress: Any = None,
) -> Bisection:
    """Walk the releases from --good to --bad (binary search), each dumped in its env (made once),
    then name the first pass that differs. `progress(what)`: the terminal's spinner (views/progress),
    which release is being made or dumped."""
    releases = releases_between(good, bad)
    with progress(f"bisecting {len(releases)} releases") if progress else contextlib.nullcontext(None) as tick:
        return _walk(request, releases, predicate, out_dir, use_cache, note, progress, tick)


def _walk(  # noqa: PLR0913
    request: jobs.Request,
    releases: list[str],
    predicate: Predicate,
    out_dir: Path,
    use_cache: bool,
    note: Callable[[str], None] | None,
    progress: Any,
    tick: Callable[..., None] | None,
) -> Bisection:
    good, bad = releases[0], releases[-1]
    result = Bisection(predicate, releases)
    tried: dict[int, Step] = {}

    def judge(i: int, reference: Side | None) -> Step:
        version = releases[i]
        env = envs.ensure(envs.Release(version, "triton", version), "--good/--bad", note, progress)
        if tick is not None:
            tick(f"triton {version}: dumping", 0)
        msg = release_worker.message(request, Path(out_dir), False, use_cache)
        res = release_worker.run_all([env.python], [[msg]])[0][0]
        if note is not None:
            note(f"bisect: triton {version}: {res['status']}")
        if res.get("status") != "ok":
            if res.get("status") == "bad input":
                raise BadInput(f"triton {version}: {res['reason']}")
            why = release_sides.failure_text(res)
            step = Step(version, "bad" if predicate.kind == "compile fails" else "skipped", why)
        elif predicate.kind == "compile fails":
            step = Step(version, "good", "compiles", release_sides.to_side("b", f"triton {version}", res))
        else:
            side = release_sides.to_side("b", f"triton {version}", res)
            true, figure = _holds(predicate, side, reference)
            step = Step(version, "bad" if true else "good", figure, side)
        tried[i] = step
        result.steps.append(step)
        return step

    first = judge(0, None)
    if first.verdict != "good":
        raise BadInput(
            f"--good {good}: the kernel is not good there ({first.verdict}: {first.figure}); give an older --good"
        )
    reference = first.side
    last = judge(len(releases) - 1, reference)
    if last.verdict != "bad":
        raise BadInput(
            f"--bad {bad}: the predicate {predicate} does not hold there ({last.verdict}: "
            f"{last.figure}); nothing to bisect"
        )
    lo, hi = 0, len(releases) - 1
    while True:
        open_ = [i for i in range(lo + 1, hi) if i not in tried]
        if not open_:
            break
        i = open_[len(open_) // 2]
        step = judge(i, reference)
        if step.verdict == "bad":
            hi = i
        elif step.verdict == "good":
            lo = i
    result.first_bad, result.last_good = releases[hi], releases[lo]
    result.untested = [releases[i] for i in range(lo + 1, hi) if tried.get(i) and tried[i].verdict == "skipped"]
    if predicate.kind != "compile fails":
        _why(request, result, out_dir, use_cache, note, progress)
    return result


def _holds(p: Predicate, side: Side, reference: Side | None) -> tuple[bool, str]:
    if p.kind == "stage changed":
        if reference is None:
            return False, "the reference"
        d = diff_mod.diff_stage(reference, side, p.name)
        return not d.equal, f"{p.name} {d.status}" + (f" (+{d.added} -{d.removed})" if not d.equal else "")
    stats = diff_mod.flatten_stats(side.manifest.get("stats") or {})
    if p.name not in stats:
        near = ", ".join(k for k in stats if not isinstance(stats[k], (dict, list)))
        raise BadInput(f"--when {p.text!r}: no stat {p.name!r} (stats: {near[:400]})")
    value = stats[p.name]
    if p.kind == "stat changed":
        ref = diff_mod.flatten_stats(reference.manifest.get("stats") or {}).get(p.name) if reference else value
        return value != ref, f"{p.name} = {value}"
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise BadInput(f"--when {p.text!r}: {p.name} is {value!r}, not a number; use '{p.name} changed'")
    return OPS[p.op](value, p.value), f"{p.name} = {value}"


def _why(
    request: jobs.Request,
    result: Bisection,
    out_dir: Path,
    use_cache: bool,
    note: Callable[[str], None] | None,
    progress: Any = None,
) -> None:
    """The first pass that differs between the last good release and the first bad one."""
    assert result.last_good is not None and result.first_bad is not None, "the walk set both"
    pair = [result.last_good, result.first_bad]
    pythons = [envs.ensure(envs.Release(v, "triton", v), "--good/--bad", note, progress).python for v in pair]
    msg = release_worker.message(request, Path(out_dir), True, use_cache)
    res = release_worker.run_all(pythons, [[msg], [msg]])
    if any(r[0].get("status") != "ok" for r in res):
        result.passes_note = "could not dump both with per-pass IR: " + "; ".join(
            release_sides.failure_text(r[0]) for r in res if r[0].get("status") != "ok"
        )
        return
    a, b = (release_sides.to_side(n, f"triton {v}", r[0]) for n, v, r in zip("ab", pair, res))
    passes = diff_mod.diff_passes(a, b)
    result.divergence = passes.divergence if passes is not None else None


def to_doc(b: Bisection) -> dict[str, Any]:
    d = b.divergence
    return {
        "irscope_bisect": 1,
        "when": b.predicate.text,
        "releases": b.releases,
        "steps": [
            {
                "release": s.release,
                "verdict": s.verdict,
                "figure": s.figure,
                "folder": str(s.side.folder) if s.side else None,
            }
            for s in b.steps
        ],
        "first_bad": b.first_bad,
        "last_good": b.last_good,
        "untested": b.untested,
        "first_divergence": None if d is None else {"where": d.where, "stage": d.stage or None, "pass": d.name or None},
        "passes_note": b.passes_note or None,
    }


def with_file(request: jobs.Request, file: Path) -> jobs.Request:
    return replace(request, file=file)
