"""The dump job: spec + settings -> a dump folder (compiled now, or copied from the cache).

Views (the summary, --stage, --json, passes) all read the folder's manifest, so a
fresh compile, a cache hit and an earlier `-o` folder render the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import artifacts, cache, compiler
from .settings import Settings
from .spec import KernelSpec


@dataclass
class DumpResult:
    folder: Path
    manifest: dict[str, Any]
    cached: bool


def dump(spec: KernelSpec, settings: Settings, out_dir: Path, with_passes: bool = False,
         use_cache: bool = True) -> DumpResult:
    bound = compiler.bind(spec, settings)
    key = compiler.cache_key(spec, settings, bound[0], with_passes)
    if use_cache and (entry := cache.lookup(key)) is not None:
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
    art = compiler.compile_spec(spec, settings, with_passes=with_passes, bound=bound)
    folder = artifacts.write(art, out_dir)
    if use_cache:
        cache.store(art.key, folder)
    return DumpResult(folder, art.manifest(), cached=False)
