"""`explain --try`: each finding's fix recompiled (the dump's own request with the fix's --arg, --const and
--set), and whether the finding went away."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from irscope import artifacts, jobs
from irscope.compile import dump as dump_job
from irscope.explain import engine
from irscope.explain.context import Context
from irscope.explain.model import Finding
from irscope.records import Manifest


@dataclass
class Trial:
    finding: Finding
    folder: str  # the dump with the fix
    gone: bool  # no finding of this kind on this line any more (spills: none at all), whatever its cause
    after: list[Finding] = field(default_factory=list)  # the findings of the dump with the fix

    def to_json(self) -> dict[str, Any]:
        return {
            "finding": list(self.finding.key),
            "fix": self.finding.fix.text,
            "folder": self.folder,
            "gone": self.gone,
            "after": [f.to_json() for f in self.after],
        }


def request_with(manifest: Manifest, kernel_file: str, finding: Finding) -> jobs.Request:
    """The request that made the dump (kernel, positional signature, target, --set options), with the fix."""
    fix = finding.fix
    args = dict(manifest.get("args") or {})
    for name, value in fix.args.items():
        args[name] = value
    for name, value in fix.consts.items():
        args[name] = str(value)
    sets = [f"{k}={v}" for k, v in (manifest.get("user_options") or {}).items() if k not in fix.sets]
    sets += [f"{k}={v}" for k, v in fix.sets.items()]
    return jobs.Request(
        Path(kernel_file or manifest["file"]),
        (manifest["kernel"],),
        ", ".join(args.values()),
        target=manifest["target"],
    ).with_sets(tuple(sets), "explain --try")


def try_fixes_of(
    folder: Path, manifest: Manifest, kernel_file: str, found: list[Finding], out_dir: Path
) -> list[Trial]:
    trials = []
    for f in found:
        if not f.fix.tryable:
            continue
        job = jobs.resolve_one(request_with(manifest, kernel_file, f), "explain --try compiles")
        result = dump_job.dump(job.spec, job.settings, out_dir)
        after = engine.findings(result)
        gone = not any(g.kind == f.kind and (g.where.line == f.where.line or f.kind == "spills") for g in after)
        trials.append(Trial(f, str(result.folder), gone, after))
    return trials


def explain_dumps(
    results: list[Any], with_trials: bool, out_dir: Path
) -> list[tuple[Path, Any, list[Finding], list[Any]]]:
    """`irscope explain`: each dump (folder or DumpResult) with its findings and, with --try, each fix's trial."""
    out = []
    for r in results:
        folder = Path(getattr(r, "folder", r))
        manifest = getattr(r, "manifest", None) or artifacts.read_manifest(folder)
        found = engine.findings(folder, manifest)
        trials = []
        if with_trials:
            trials = try_fixes_of(folder, manifest, Context(folder, manifest).kernel_file, found, out_dir)
        out.append((folder, manifest, found, trials))
    return out
