"""Diff sides that name their Triton (diff-releases --a-triton/--b-triton): each dumped by a worker in its env.

Both envs are found or made (and the releases checked against the index) before anything
compiles; then both sides dump at once, one worker each, into compare.sides' staging folder, so
the dump folders land in the normal layout and compare/ reads them unchanged. A side without a
Triton of its own uses the running interpreter's, in a worker too (the two sides overlap).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from irscope import adapter, jobs
from irscope.artifacts import MANIFEST
from irscope.compare.sides import Side, SideFailed, SideRequest, place_sides
from irscope.errors import BadInput
from irscope.releases import envs
from irscope.releases import worker as release_worker


def running_env() -> envs.Env:
    """The running interpreter's Triton, read from its metadata (importing Triton here costs a second
    the parent does not need: the worker imports it)."""
    for dist in envs.DISTS[::-1]:
        version = envs.installed_version(dist)
        if version:
            return envs.Env(envs.Release("running", dist, version), sys.executable, version, "running")
    version = adapter.triton_version()
    return envs.Env(envs.Release("running", "triton", version), sys.executable, version, "running")


def side_envs(
    tritons: tuple[str | None, str | None],
    note: Callable[[str], None] | None = None,
    names: tuple[str, str] = ("a", "b"),
    progress: Any = None,
) -> list[envs.Env]:
    """Each side's env: both texts parsed first, then each env found or made; a problem names its flag."""
    releases = [envs.parse(t, f"--{n}-triton") if t is not None else None for t, n in zip(tritons, names)]
    return [envs.ensure(r, f"--{n}-triton", note, progress) if r else running_env() for r, n in zip(releases, names)]


def env_label(env: envs.Env) -> str:
    dist = env.release.dist if env.release.python is None or env.release.dist != "triton" else "triton"
    return f"{dist} {env.triton}"


def side_request(request: jobs.Request, req: SideRequest) -> jobs.Request:
    """The shared request with the side's variant, target and --a/--b options on top (as side_jobs)."""
    side = replace(request, variant=req.variant or request.variant)
    if req.target:
        side = replace(side, target=req.target, target_flag=f"--{req.name}-target")
    return side.with_sets(req.sets, f"--{req.name}")


def label(req: SideRequest, env: envs.Env) -> str:
    own = req.label()
    return env_label(env) + ("" if own == "shared settings" else f", {own}")


def dump_sides(
    request: jobs.Request,
    reqs: tuple[SideRequest, SideRequest],
    side_envs: list[envs.Env],
    out_dir: Path,
    with_passes: bool,
    use_cache: bool,
) -> tuple[Side, Side]:
    """Both sides, each in its env's worker, at once; both or neither written (place_sides)."""
    if any(r.variant for r in reqs) and not request.recipe:
        raise BadInput("--a-variant/--b-variant name variants of a recipe: give it with --recipe")

    def make(staging: Path) -> list[Side]:
        msgs = [[release_worker.message(side_request(request, r), staging, with_passes, use_cache)] for r in reqs]
        results = release_worker.run_all([e.python for e in side_envs], msgs)
        return [to_side(req.name, label(req, env), res[0]) for req, env, res in zip(reqs, side_envs, results)]

    return place_sides(out_dir, make)


def to_side(name: str, text: str, result: dict[str, Any]) -> Side:
    """A worker's answer as a Side; a failure as diff's error for that side (exit 2)."""
    status = result.get("status")
    if status == "ok":
        folder = Path(result["folder"])
        return Side(name, text, folder, json.loads((folder / MANIFEST).read_text()), result.get("cached"))
    if status == "bad input":
        raise BadInput(f"side {name} ({text}): {result['reason']}")
    raise SideFailed(f"side {name} ({text}): {failure_text(result)}")


def failure_text(result: dict[str, Any]) -> str:
    if result.get("status") == "compile failed" and result.get("stage"):
        return f"compile failed in stage '{result['stage']}': {result['reason']}"
    return str(result.get("reason", result.get("status")))
