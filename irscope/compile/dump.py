"""The dump job: spec + settings -> a dump folder (compiled now, or copied from the cache).

Views (the summary, --stage, --json, passes) all read the folder's manifest, so a
fresh compile, a cache hit and an earlier `-o` folder render the same way.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from irscope import artifacts
from irscope.compile import cache, compiler
from irscope.compile.cache import DumpResult  # noqa: F401  (the result type lives with the cache)
from irscope.kernel import inputs
from irscope.kernel.settings import Settings, jsonable
from irscope.kernel.spec import KernelSpec
from irscope.records import Manifest


def cached(
    spec: KernelSpec, settings: Settings, out_dir: Path, with_passes: bool = False, with_sass: bool = True, bound=None
) -> DumpResult | None:
    """The dump from irscope's cache, copied to its folder under out_dir; None on a miss.

    A damaged entry is dropped and counts as a miss, with a note on stderr.
    """
    hit, damage = _from_cache(spec, settings, out_dir, with_passes, with_sass, bound)
    if damage is not None:
        _note(damage[0], damage[1], "it will be recompiled")
    return hit


def _from_cache(
    spec: KernelSpec, settings: Settings, out_dir: Path, with_passes: bool, with_sass: bool, bound
) -> tuple[DumpResult | None, tuple[str, str] | None]:
    """(hit or None, (key, why) when the entry was damaged and has been dropped)."""
    bound = bound or compiler.bind(spec, settings)
    key = compiler.cache_key(spec, settings, bound[0], with_passes, with_sass)

    def final_for(manifest: Manifest) -> Path:
        if manifest["kernel"] != spec.kernel:  # an entry is data: one of another kernel is not this dump
            raise cache.Damaged(f"its manifest names kernel {manifest['kernel'][:60]!r}, not {spec.kernel}")
        return cache.folder_for(out_dir, manifest, key)

    def edit(manifest: Manifest) -> Manifest:
        # the reason the target was chosen belongs to this run, not to the cached one
        manifest["file"] = str(spec.file)  # the same code may live in another file than the cached run's
        manifest["target_reason"] = settings.target_reason
        manifest["option_sources"] = dict(settings.sources)
        manifest["user_options"] = jsonable(settings.options)  # an entry is shared by runs that set it or not
        manifest["notes"] = list(spec.notes)
        return manifest

    try:
        hit = cache.restore(key, final_for, edit)
    except cache.Damaged as e:
        cache.discard(key)
        return None, (key, str(e))
    if hit is None:
        return None, None
    return DumpResult(hit[0], hit[1], cached=True, key=key, served="cache"), None


def _no_progress(what: str, total: int | None = None) -> contextlib.AbstractContextManager[Callable[..., None]]:
    return contextlib.nullcontext(lambda *a: None)


def _note(key: str, why: str, then: str) -> None:
    sys.stderr.write(f"irscope: note: cache entry {key[:16]} was damaged ({why}); {then}\n")
    sys.stderr.flush()


def dump(
    spec: KernelSpec,
    settings: Settings,
    out_dir: Path,
    with_passes: bool = False,
    use_cache: bool = True,
    with_sass: bool = True,
    compiling: Any = None,
    prebuilt: compiler.Prebuilt | None = None,
) -> DumpResult:
    """Compile (or copy from the cache) into out_dir.

    use_cache=False (--no-cache) does not read the cache but still stores the fresh result,
    replacing any entry there; so does a recompile after a damaged entry. `compiling`: a context
    manager factory entered around the compile only (a capture's dumps arm their signal stop
    there, so a stop never cuts a dump between its folder and its cache entry). `prebuilt`: the script's
    own compile of this kernel, taken when its compile identity is this compile's (compiler.compile_spec);
    `DumpResult.served` is then "reused".
    """
    bound = compiler.bind(spec, settings)
    damage = None
    if use_cache:
        hit, damage = _from_cache(spec, settings, out_dir, with_passes, with_sass, bound)
        if hit is not None:
            return hit
    with compiling() if compiling is not None else contextlib.nullcontext():
        art = compiler.compile_spec(
            spec, settings, with_passes=with_passes, bound=bound, with_sass=with_sass, prebuilt=prebuilt
        )
    folder = artifacts.write(art, out_dir)
    cache.store(art.key, lambda tmp: artifacts.write_into(art, tmp), replace=not use_cache or damage is not None)
    if damage is not None:
        _note(damage[0], damage[1], "recompiled")
    return DumpResult(folder, art.manifest(), cached=False, key=art.key, served="reused" if art.reused else "compiled")


def dump_jobs(
    todo,
    out_dir: Path,
    with_passes: bool = False,
    use_cache: bool = True,
    stage: str | None = None,
    progress: Callable[..., contextlib.AbstractContextManager[Callable[..., None]]] | None = None,
) -> list[DumpResult]:
    """Dump each job (a jobs.Job: .spec, .settings) into out_dir, in order: `irscope dump FILE`, the
    commands that read dumps (lines, passes) and the Python API's irscope.dump all call this.

    `stage` (--stage): refused before anything compiles when a job's target has no such stage, and
    after the dumps when one of them lacks it. `progress(what, total)` (views/progress.Reporter): n of
    N kernels compiled, and which one is compiling."""
    for job in todo:
        inputs.check_stage_for_target(stage, job.settings.target)
    what = "compiling" + (" with the IR after every pass recorded" if with_passes else "")
    results = []
    with (progress or _no_progress)(what, len(todo)) as advance:
        for job in todo:
            advance(f"{job.spec.kernel} on {job.settings.target.name}", 0)
            results.append(dump(job.spec, job.settings, out_dir, with_passes, use_cache))
            advance(f"{job.spec.kernel}: {'from cache' if results[-1].cached else 'compiled'}")
    if stage:
        inputs.check_stage(results, stage)
    return results
