"""The dump job: spec + settings -> a dump folder (compiled now, or copied from the cache).

Views (the summary, --stage, --json, passes) all read the folder's manifest, so a
fresh compile, a cache hit and an earlier `-o` folder render the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irscope.core import artifacts, cache, compiler
from irscope.core.settings import Settings
from irscope.core.spec import KernelSpec


@dataclass
class DumpResult:
    folder: Path
    manifest: dict[str, Any]
    cached: bool


def cached(spec: KernelSpec, settings: Settings, out_dir: Path, with_passes: bool = False,
           with_sass: bool = True, bound=None) -> DumpResult | None:
    """The dump from irscope's cache, copied to its folder under out_dir; None on a miss."""
    bound = bound or compiler.bind(spec, settings)
    key = compiler.cache_key(spec, settings, bound[0], with_passes, with_sass)
    entry = cache.lookup(key)
    if entry is None:
        return None
    manifest = json.loads((entry / artifacts.MANIFEST).read_text())
    final = out_dir / manifest["kernel"] / f"{manifest['target'].replace(':', '')}-{key[:8]}"
    cache.restore(entry, final)
    # the reason the target was chosen belongs to this run, not to the cached one
    manifest["file"] = str(spec.file)  # the same code may live in another file than the cached run's
    manifest["target_reason"] = settings.target_reason
    manifest["option_sources"] = dict(settings.sources)
    manifest["notes"] = list(spec.notes)
    (final / artifacts.MANIFEST).write_text(json.dumps(manifest, indent=1, default=str))
    return DumpResult(final, manifest, cached=True)


def dump(spec: KernelSpec, settings: Settings, out_dir: Path, with_passes: bool = False,
         use_cache: bool = True, with_sass: bool = True) -> DumpResult:
    bound = compiler.bind(spec, settings)
    if use_cache and (hit := cached(spec, settings, out_dir, with_passes, with_sass, bound)) is not None:
        return hit
    art = compiler.compile_spec(spec, settings, with_passes=with_passes, bound=bound, with_sass=with_sass)
    folder = artifacts.write(art, out_dir)
    if use_cache:
        cache.store(art.key, folder)
    return DumpResult(folder, art.manifest(), cached=False)
