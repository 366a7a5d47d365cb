"""The two sides of a comparison: each a dump folder, compiled from a job or read from an earlier dump.

File mode (`irscope diff k.py --a ... --b ...`): each side's job is built by side_jobs() alone,
from the shared jobs.Request plus a SideRequest (--a/--b options, --a-target/--b-target,
--a-variant/--b-variant), so new ways to vary a side only extend SideRequest and that function.
Folder mode (`irscope diff DIR_A DIR_B`): load_side reads each dump as it is.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from irscope import artifacts, jobs
from irscope.artifacts import MANIFEST
from irscope.compile import compiler
from irscope.compile import dump as dump_job
from irscope.errors import BadInput, IrscopeError
from irscope.records import Manifest


class SideFailed(IrscopeError):
    """A side did not compile: for diff that is trouble (exit 2, as diff(1)), not a difference (1).

    The message names the side, then the compiler's stage and reason."""

    exit_code = 2


@dataclass
class Side:
    """One side of a comparison: a dump folder and its manifest."""

    name: str  # "a" | "b"
    label: str  # what makes this side itself (e.g. "num_warps=8", a folder)
    folder: Path
    manifest: Manifest
    cached: bool | None = None  # None: an existing dump folder
    dump: Any = None  # file mode: the compile's cache.DumpResult (its folder where the side was placed)
    key: str = ""  # the dump's cache key, where this process compiled or fetched it


@dataclass
class SideRequest:
    """What one side changes on top of the shared request (file mode)."""

    name: str  # "a" | "b"
    target: str | None = None  # --a-target / --b-target
    sets: list[str] = field(default_factory=list)  # --a / --b KEY=VALUE
    variant: str | None = None  # --a-variant / --b-variant

    @property
    def given(self) -> bool:
        return bool(self.target or self.sets)

    def label(self) -> str:
        parts = list(self.sets) + ([self.target] if self.target else [])
        own = " ".join(parts)
        return ", ".join(x for x in (f"variant {self.variant}" if self.variant else "", own) if x) or "shared settings"


def side_jobs(request: jobs.Request, reqs: tuple[SideRequest, SideRequest]) -> list[jobs.Job]:
    """Each side's job: the shared request, then the side's variant, target and --a/--b options on top.

    Both are resolved and bound (Triton's parse_options checks each side's options) before
    anything compiles; a problem names its side.
    """
    variants = [r.variant for r in reqs]
    if any(variants) and not request.recipe:
        raise BadInput("--a-variant/--b-variant name variants of a recipe: give it with --recipe")
    if not any(variants) and not any(r.given for r in reqs):
        raise BadInput(
            "nothing to compare: give what differs with --a/--b KEY=VALUE or --a-target/--b-target, "
            "or compare two dump folders (irscope diff DIR_A DIR_B)"
        )
    out = []
    for req in reqs:
        side = replace(request, variant=req.variant or request.variant)
        if req.target:
            side = replace(side, target=req.target, target_flag=f"--{req.name}-target")
        try:
            job = jobs.resolve_one(side.with_sets(req.sets, f"--{req.name}"), "diff compares")
        except BadInput as e:
            if not str(e).startswith("side "):
                e.args = (f"side {req.name}: {e}",)
            raise
        job.label = req.label()
        out.append(job)
    for job, req in zip(out, reqs):
        _bind(job, req)
    return out


def _bind(job: jobs.Job, req: SideRequest) -> None:
    """Triton binds the side's options (cheap: no compile); a refusal names the side."""
    notes = list(job.spec.notes)
    try:
        compiler.bind(job.spec, job.settings)
    except BadInput as e:
        if not str(e).startswith("side "):
            e.args = (f"side {req.name} ({req.label()}): {e}",)
        raise
    finally:
        job.spec.notes[:] = notes  # the dump binds again and notes what it finds


def dump_side(job: jobs.Job, req: SideRequest, out_dir: Path, with_passes: bool, use_cache: bool) -> Side:
    """Compile (or fetch from the cache) one side; failures name the side (a compile failure: exit 2).

    Writes this side at once; dump_sides writes both or neither."""
    try:
        r = dump_job.dump(job.spec, job.settings, out_dir, with_passes=with_passes, use_cache=use_cache)
    except BadInput as e:
        e.args = (f"side {req.name} ({req.label()}): {e}",)
        raise
    except IrscopeError as e:
        raise SideFailed(f"side {req.name} ({req.label()}): {e}") from e
    return Side(req.name, req.label(), r.folder, r.manifest, r.cached, dump=r, key=r.key)


def dump_sides(
    side_jobs: list[jobs.Job], reqs: tuple[SideRequest, SideRequest], out_dir: Path, with_passes: bool, use_cache: bool
) -> tuple[Side, Side]:
    """Both sides, or nothing (place_sides): each compiled here, one after the other."""
    return place_sides(
        out_dir,
        lambda staging: [dump_side(job, req, staging, with_passes, use_cache) for job, req in zip(side_jobs, reqs)],
    )


def place_sides(out_dir: Path, make: Callable[[Path], list[Side]]) -> tuple[Side, Side]:
    """Both sides, or nothing: make(staging) compiles each into a hidden staging folder under out_dir
    (here, or in a worker with another Triton) and only when both succeeded are they moved into
    place; a failure leaves out_dir as it was."""
    out_dir = Path(out_dir)
    created = [p for p in (out_dir, *out_dir.parents) if not p.exists()]
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".irscope-diff-", dir=out_dir))
    try:
        staged = make(staging)
        placed: dict[Path, Path] = {}
        for side in staged:
            rel = side.folder.relative_to(staging)
            if rel not in placed:  # both sides may be one dump (the same settings)
                final = out_dir / rel
                final.parent.mkdir(parents=True, exist_ok=True)
                artifacts.publish(side.folder, final)
                placed[rel] = final
            side.folder = placed[rel]
            if side.dump is not None:
                side.dump = replace(side.dump, folder=side.folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for p in created:  # what this call made and nothing filled
            try:
                p.rmdir()
            except OSError:
                break
        raise
    shutil.rmtree(staging, ignore_errors=True)
    return staged[0], staged[1]


def load_side(name: str, folder: Path, kernels: tuple[str, ...] = ()) -> Side:
    """A side from an earlier dump: a folder with manifest.json, or an `-o` folder holding one dump."""
    folder = Path(folder)
    if not folder.exists():
        raise BadInput(f"{folder}: no such folder")
    if not folder.is_dir():
        raise BadInput(f"{folder}: not a folder; to compare settings of a kernel file use --a/--b")
    path = folder / MANIFEST
    if not path.is_file():
        found = sorted(
            p.parent
            for p in list(folder.glob(f"*/{MANIFEST}")) + list(folder.glob(f"*/*/{MANIFEST}"))
            if not p.parent.name.startswith(".")
        )
        if kernels:
            found = [p for p in found if _peek_kernel(p) in kernels]
        if not found:
            raise BadInput(f"{folder}: not an irscope dump folder (no {MANIFEST})")
        if len(found) > 1:
            names = ", ".join(str(p) for p in found[:3]) + (", ..." if len(found) > 3 else "")
            raise BadInput(f"{folder}: holds {len(found)} dumps ({names}); name one of them")
        folder, path = found[0], found[0] / MANIFEST
    manifest = artifacts.read_manifest(folder)
    if kernels and manifest["kernel"] not in kernels:
        raise BadInput(f"{folder}: holds kernel {manifest['kernel']!r}, not {', '.join(kernels)}")
    return Side(name, str(folder), folder, manifest, None)


def _peek_kernel(folder: Path) -> str | None:
    try:
        return json.loads((folder / MANIFEST).read_text()).get("kernel")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None


def check_same_kernel(a: Side, b: Side) -> None:
    """Two dumps are comparable when they hold the same kernel (by name).

    The file may differ: its folder (a checkout before and after an edit) or its name (an edited
    copy, kernels.py and kernels_v2.py); the diff's summary and --json then say the sources differ.
    """
    ka, kb = a.manifest["kernel"], b.manifest["kernel"]
    if ka != kb:
        raise BadInput(
            f"the dumps hold different kernels: {ka} ({a.manifest.get('file')}) vs "
            f"{kb} ({b.manifest.get('file')}); diff compares two compiles of one kernel"
        )
