"""irscope's own result cache: an identical repeat dump is a folder copy.

Keyed by compiler.cache_key (kernel code and everything it calls, the spec, the
effective options, target, Triton version and the env knobs Triton hashes). Lives
in $IRSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/irscope, else ~/.cache/irscope.
Entries are whole dump folders, published by rename, so a reader never sees half.

Each entry carries the sha256 of every file in it (CHECKSUMS, a hidden file that is not copied
out). A restore verifies its copy against them, so a damaged entry (a truncated or garbled
manifest, an emptied, garbled or deleted file) is never served: the caller is told why
(`Damaged`), drops the entry and recompiles, and the fresh result replaces it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from irscope import knobs
from irscope.artifacts import MANIFEST, TMP_PREFIX, inside, make_tmp, publish, remove_stale_tmps
from irscope.errors import BadInput
from irscope.records import Manifest

CHECKSUMS = ".irscope-sha256.json"


@dataclass
class DumpResult:
    """A dump folder and its manifest, and how it came to be (what every dump view renders)."""

    folder: Path
    manifest: Manifest  # its manifest.json (records.Manifest)
    cached: bool
    key: str = ""  # the full cache key of the dump
    served: str = ""  # "compiled", "cache" (found by the full key) or "direct" (irscope/direct)


class Damaged(Exception):
    """A cache entry that cannot be served as it is; str() says why."""


def cache_dir() -> Path:
    """$IRSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/irscope, else ~/.cache/irscope (knobs.CACHE_DIR)."""
    return knobs.cache_dir()


# The code that decides what a dump folder holds: the compile pipeline, the steering, the job model.
# Views, capture, timing and sweeps show or use dumps but never change one.
_DUMP_CODE = ("adapter", "kernel", "artifacts", "compile", "steer", "stages.py", "knobs.py", "jobs.py")


def code_fingerprint() -> str:
    """Hash of the irscope code that makes dumps: a changed irscope never serves an old result.

    Each file counts by its path, size and modification time (the rule Python itself uses to
    decide that a module's cached bytecode is stale), so a cached re-dump pays for a few dozen
    stat calls rather than reading and hashing every source file.
    """
    h = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    files = [
        p
        for part in _DUMP_CODE
        for p in ([package / part] if part.endswith(".py") else (package / part).rglob("*.py"))
        if p.exists()
    ]
    for path in sorted(files):
        st = path.stat()
        h.update(f"{path.relative_to(package)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def folder_for(out_dir: Path, manifest: Manifest, key: str) -> Path:
    """Where a dump of this manifest goes under out_dir: KERNEL/TARGET-KEY8."""
    return out_dir / manifest["kernel"] / f"{manifest['target'].replace(':', '')}-{key[:8]}"


def entry_path(key: str) -> Path:
    return cache_dir() / key


def lookup(key: str) -> Manifest | None:
    """The manifest of the cached entry for `key`; None on a miss. Raises Damaged for a broken manifest."""
    entry = entry_path(key)
    if not entry.is_dir():
        return None
    return _read_manifest(entry)


def _read_manifest(folder: Path) -> Manifest:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise Damaged(f"no {MANIFEST}") from None
    except (OSError, ValueError) as e:
        raise Damaged(f"{MANIFEST} unreadable: {e}") from None
    if not isinstance(manifest, dict) or not all(isinstance(manifest.get(k), str) for k in ("kernel", "target")):
        raise Damaged(f"{MANIFEST} is not a dump manifest")
    if not isinstance(manifest.get("stages"), dict):
        raise Damaged(f"{MANIFEST} lists no stages")
    return cast(Manifest, manifest)  # its kernel, target and stages checked above


def sha256_of(path: Path | str) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks (cache entries' checksums; the direct mode's
    record of what a dump depended on)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != CHECKSUMS)


def _write_checksums(folder: Path) -> None:
    sums = {name: sha256_of(folder / name) for name in _files(folder)}
    (folder / CHECKSUMS).write_text(json.dumps(sums, indent=0, sort_keys=True))


def _verify(folder: Path) -> Manifest:
    """Check a copied entry against its checksums; returns its manifest, raises Damaged."""
    try:
        sums = json.loads((folder / CHECKSUMS).read_text())
    except FileNotFoundError:
        raise Damaged("no checksums") from None
    except (OSError, ValueError) as e:
        raise Damaged(f"checksums unreadable: {e}") from None
    if not isinstance(sums, dict):
        raise Damaged("checksums unreadable")
    manifest = _read_manifest(folder)
    for name in list(manifest["stages"].values()) + [MANIFEST]:
        if name not in sums:
            raise Damaged(f"{name} has no checksum")
    for name, digest in sorted(sums.items()):
        try:
            path = inside(folder, name, CHECKSUMS)
        except BadInput:
            raise Damaged(f"{name} is missing, outside the entry or not a file") from None
        if sha256_of(path) != digest:
            raise Damaged(f"{name} does not match its checksum")
    return manifest


def _in_place(entry: Path, final: Path, manifest: Manifest) -> bool:
    """`final` holds exactly what a restore would put there (the entry's files, by their checksums, and
    this manifest), as after an earlier identical dump into the same folder: nothing to copy."""
    try:
        if not final.is_dir():
            return False
        _verify(entry)  # a damaged entry is the caller's to drop and recompile, as on a copy
        sums = json.loads((entry / CHECKSUMS).read_text())
        if sorted(sums) != _files(final):
            return False
        if json.loads((final / MANIFEST).read_text()) != manifest:
            return False
        return all(sha256_of(final / name) == digest for name, digest in sums.items() if name != MANIFEST)
    except (OSError, ValueError, TypeError, Damaged):
        return False


def restore(
    key: str, final_for: Callable[[Manifest], Path], edit: Callable[[Manifest], Manifest] | None = None
) -> tuple[Path, Manifest] | None:
    """Copy the entry for `key` to the folder final_for(manifest), verified, and publish it atomically.

    `edit` may change the manifest (written into the copy before it is published). A folder that
    already holds exactly that (an identical earlier dump to the same place) is left as it is. Returns
    (folder, manifest), None on a miss (also when the entry vanished mid-copy: another process
    dropped it); raises Damaged when the entry fails its checks twice (a concurrent refresh of
    the entry can spoil one copy).
    """
    entry = entry_path(key)
    reason: Damaged | None = None
    for _ in range(2):
        manifest = lookup(key)
        if manifest is None:
            return None
        final = final_for(manifest)
        wanted = json.loads(json.dumps(edit(json.loads(json.dumps(manifest))) if edit else manifest, default=str))
        if _in_place(entry, final, wanted):
            remove_stale_tmps(final.parent)  # as a write there would
            return final, wanted
        tmp = make_tmp(final)
        try:
            try:
                shutil.copytree(entry, tmp, dirs_exist_ok=True)
                manifest = _verify(tmp)
            except Damaged as e:
                reason = e
                shutil.rmtree(tmp, ignore_errors=True)
                continue
            except OSError:
                shutil.rmtree(tmp, ignore_errors=True)
                if not entry.is_dir():
                    return None
                reason = Damaged("unreadable")
                continue
            (tmp / CHECKSUMS).unlink()
            if edit is not None:
                manifest = edit(manifest)
                (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, default=str))
            publish(tmp, final)
            return final, manifest
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    assert reason is not None  # the loop returns unless both tries found the entry damaged
    raise reason


RACY_NS = 2_000_000_000  # a file changed this recently may change again within its timestamps' tick


def folder_stamp(
    folder: Path, leave_out: str | None = None, skip: tuple[str, ...] = (), links: bool = True
) -> list | None:
    """Every file under folder by (name, size, mtime, ctime, inode), a symlinked folder as one entry,
    `leave_out` (a real path) and the folders named in `skip` aside; None when a folder cannot be read
    or, with links=False, when one holds a symlink (what it points to is not stamped)."""
    out = []
    try:
        for root, dirs, names in os.walk(folder, onerror=_raise):
            dirs[:] = sorted(d for d in dirs if d not in skip)
            real_root = os.path.realpath(root) if leave_out else ""
            for name in sorted(names + [d for d in dirs if os.path.islink(os.path.join(root, d))]):
                path = os.path.join(root, name)
                if leave_out and os.path.join(real_root, name) == leave_out:
                    continue
                st = os.lstat(path)
                if not links and stat.S_ISLNK(st.st_mode):
                    return None
                out.append([os.path.relpath(path, folder), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
    except OSError:
        return None
    return out


def _raise(error: OSError) -> None:
    raise error


def changed_lately(stamps: Iterable[list]) -> bool:
    """Whether a file of these folder_stamp()s changed within the last RACY_NS (the timestamps' coarse
    tick could hide a second write, as git's racy index): such a stamp must not be trusted later."""
    newest = max((f[3] for stamp in stamps for f in stamp), default=0)
    return newest > time.time_ns() - RACY_NS


def placed_stamp(key: str, final: Path) -> list | None:
    """What lets a later serve of `key` into `final` skip the checksums: every file of the entry and of the
    folder by size, mtime, ctime and inode, taken just after a restore verified them. A write, a
    replaced or added file moves a ctime, which nothing sets back; None when a file changed lately
    (changed_lately)."""
    entry, placed = folder_stamp(entry_path(key)), folder_stamp(final)
    if entry is None or not placed:
        return None
    stamp = [entry, placed]
    return None if changed_lately(stamp) else stamp


def still_placed(key: str, final: Path, stamp: list | None) -> Manifest | None:
    """The manifest in `final` when neither it nor the entry changed since placed_stamp(); else None."""
    if not stamp or [folder_stamp(entry_path(key)), folder_stamp(final)] != stamp:
        return None
    try:
        manifest = json.loads((final / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    remove_stale_tmps(final.parent)  # as a restore there would
    # the manifest a restore verified: the stamps say nothing changed since
    return cast(Manifest, manifest) if isinstance(manifest, dict) else None


def discard(key: str) -> None:
    """Drop the entry for `key` (renamed aside first, so no reader finds it half-removed)."""
    entry = entry_path(key)
    aside = entry.with_name(f"{TMP_PREFIX}{key[:16]}.dropped.{os.getpid()}.{os.urandom(4).hex()}")
    try:
        os.rename(entry, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def store(key: str, fill: Callable[[Path], None] | Path, replace: bool = False) -> None:
    """Put a finished dump into the cache: fill(folder) writes it (or a Path to copy from).

    Written to a temporary entry with its checksums, then renamed into place. An existing entry
    is kept (the temporary one is dropped) unless `replace`, when the fresh one swaps it out
    atomically. A cache that cannot be written is skipped.
    """
    entry = entry_path(key)
    try:
        tmp = make_tmp(entry)
    except OSError:
        return
    try:
        if isinstance(fill, Path):
            shutil.copytree(fill, tmp, dirs_exist_ok=True)
        else:
            fill(tmp)
        _write_checksums(tmp)
        if replace:
            publish(tmp, entry)
            return
        try:
            os.rename(tmp, entry)
        except OSError:  # there is an entry already (another process published it first)
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
