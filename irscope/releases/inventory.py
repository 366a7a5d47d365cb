"""`irscope envs`: the Triton environments irscope made (CACHE/envs/DIST-VERSION/, envs.py), listed and removed.

An environment is irscope's when it is a real folder (not a symlink) directly in CACHE/envs/ whose marker
(`irscope-env.json`, written last when it was made) says so. Nothing else is listed as one, and nothing
else is removed: the cache is data, a symlink is never followed out of it (a folder that is a symlink is
refused; inside an env, links are removed as links, never their targets). Builds cut short (a `.tmp-*`
folder left by a killed run) are counted, and removed by `--all`.

    listed()            -> Inventory: each env (release, size, made, last use, path) and the leftovers
    remove(names, all)  -> the envs removed; a bad release name, one not made, or one being made: BadInput
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from irscope.errors import BadInput
from irscope.releases import envs


@dataclass(frozen=True)
class EnvInfo:
    """One environment irscope made."""

    release: str  # as `irscope envs remove` takes it: 3.8.0, fbtriton==3.7.4
    dist: str
    version: str
    path: Path
    size_bytes: int
    made: float | None  # epoch seconds (None: an older marker without it)
    last_used: float | None  # epoch seconds: when a run last found it (None: never since it was made)
    how: str  # "made with uv" | "made with pip"


@dataclass
class Inventory:
    """What CACHE/envs/ holds."""

    folder: Path
    envs: list[EnvInfo] = field(default_factory=list)
    unfinished: list[Path] = field(default_factory=list)  # .tmp-* builds a killed run left
    unfinished_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        return sum(e.size_bytes for e in self.envs) + self.unfinished_bytes


def listed() -> Inventory:
    """Every environment irscope made, by release (oldest release first), and the unfinished builds."""
    folder = envs.envs_dir()
    inv = Inventory(folder)
    if not _real_folder(folder):
        return inv
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.name.startswith(".tmp-") and entry.is_dir(follow_symlinks=False):
            inv.unfinished.append(Path(entry.path))
            inv.unfinished_bytes += folder_bytes(Path(entry.path))
            continue
        info = _env_info(Path(entry.path))
        if info is not None:
            inv.envs.append(info)
    inv.envs.sort(key=lambda e: (e.dist, envs.version_key(e.version)))
    return inv


def remove(names: tuple[str, ...], every: bool) -> tuple[list[EnvInfo], list[Path]]:
    """Remove the environments named (3.8.0, fbtriton==3.7.4) or, with `every`, all of them and the
    unfinished builds. Every name is checked before anything is removed (one BadInput line, exit 2)."""
    if every and names:
        raise BadInput("irscope envs remove: give release names or --all, not both")
    if not every and not names:
        raise BadInput("irscope envs remove: name a release (irscope envs remove 3.8.0) or give --all")
    inv = listed()
    if every:
        chosen, leftovers = list(inv.envs), list(inv.unfinished)
    else:
        by_name = {(e.dist, e.version): e for e in inv.envs}
        chosen, leftovers = [], []
        for text in names:
            release = envs.parse(text, "irscope envs remove")
            if release.python is not None:
                raise BadInput(
                    f"irscope envs remove {text}: name a release (3.8.0, fbtriton==3.7.4), not an interpreter"
                )
            env = by_name.get((release.dist, release.version))
            if env is None:
                raise BadInput(_not_made(text, release, inv))
            if env not in chosen:
                chosen.append(env)
    for env in chosen:
        _remove_env(env, inv.folder)
    for path in leftovers:
        if _inside(path, inv.folder) and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
    return chosen, leftovers


def _not_made(text: str, release: envs.Release, inv: Inventory) -> str:
    folder = inv.folder / release.name
    made = ", ".join(e.release for e in inv.envs) or "none"
    if os.path.lexists(folder):  # something is there, but not an env irscope made (or a symlink)
        return (
            f"irscope envs remove {text}: {folder} is not an environment irscope made (no marker, or a "
            f"symlink); left as it is"
        )
    return f"irscope envs remove {text}: no environment of {release.dist} {release.version} (made: {made})"


def _remove_env(env: EnvInfo, folder: Path) -> None:
    """One env removed whole, under its lock (a run making it holds the lock: refused, not waited for)."""
    if not _inside(env.path, folder) or not _real_folder(env.path) or _env_info(env.path) is None:
        raise BadInput(f"irscope envs remove {env.release}: {env.path} is not an environment irscope made")
    with open(folder / f".{env.path.name}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise BadInput(
                f"irscope envs remove {env.release}: another irscope run is making it now; try again after it"
            ) from None
        trash = folder / f".tmp-{env.path.name}-removing"
        if os.path.lexists(trash):
            shutil.rmtree(trash, ignore_errors=True)
        os.rename(env.path, trash)  # gone from its name at once: a run looking for it never finds half of it
        shutil.rmtree(trash, ignore_errors=True)
    with contextlib.suppress(OSError):
        (folder / f".{env.path.name}.lock").unlink()


def _env_info(path: Path) -> EnvInfo | None:
    """The env at `path` when it is one irscope made: a real folder with its marker, else None."""
    if not _real_folder(path):
        return None
    marker = path / envs.MARKER
    try:
        if marker.is_symlink():
            return None
        doc = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("irscope_env") != 1:
        return None
    dist, version = str(doc.get("dist", "")), str(doc.get("version", ""))
    if dist not in envs.DISTS or path.name != f"{dist}-{version}":
        return None
    used = path / envs.LAST_USE
    made = doc.get("made")
    return EnvInfo(
        release=version if dist == "triton" else f"{dist}=={version}",
        dist=dist,
        version=version,
        path=path,
        size_bytes=folder_bytes(path),
        made=float(made) if isinstance(made, (int, float)) else _mtime(marker),
        last_used=_mtime(used),
        how=str(doc.get("how", "")),
    )


def folder_bytes(path: Path) -> int:
    """The bytes of the files under `path` (links counted as links, never followed)."""
    total = 0
    stack = [path]
    while stack:
        here = stack.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(Path(e.path))
            else:
                total += st.st_size
    return total


def _real_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _inside(path: Path, folder: Path) -> bool:
    return path.parent == folder


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
