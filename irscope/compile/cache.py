"""irscope's own result cache: an identical repeat dump is a folder copy.

Keyed by compiler.cache_key (kernel code and everything it calls, the spec, the
effective options, target, Triton version and the env knobs Triton hashes). Lives
in $IRSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/irscope, else ~/.cache/irscope.
Entries are whole dump folders, published by rename, so a reader never sees half.

Each entry carries the sha256 of every file in it and a digest over those and its key (CHECKSUMS, a
hidden file that is not copied out). A restore verifies its copy against them, so a damaged entry (a
truncated or garbled manifest, an emptied, garbled or deleted file, an entry moved under another key,
one half written) is never served: the caller is told why (`Damaged`), drops the entry and recompiles,
and the fresh result replaces it.

The cache is data (docs/guides/threat-model.md, "The cache and whom it trusts"): it may be shared, restored from elsewhere or written by
another user. Its key names an entry only when it is a hex digest; an entry, or anything in one, that is a
symbolic link or not a regular file or folder is never followed nor opened (`Damaged`); JSON is read
bounded in size and nesting (`read_json`); a name from a manifest that becomes a path is one path
component (`component`) and the folder it makes stays inside -o (`folder_for`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
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
JSON_LIMIT = 16 << 20  # a manifest, a checksums file or a record is far smaller
_KEY = re.compile(r"[0-9a-f]{16,128}")
NAME_LIMIT = 200  # bytes of one path component made from data (most file systems allow 255)
_DEPTH_LIMIT = 64  # folders inside an entry (a dump folder has two levels)


@dataclass
class DumpResult:
    """A dump folder and its manifest, and how it came to be (what every dump view renders)."""

    folder: Path
    manifest: Manifest  # its manifest.json (records.Manifest)
    cached: bool
    key: str = ""  # the full cache key of the dump
    served: str = ""  # "compiled", "reused" (the script's own compile, compiler.Prebuilt), "cache" (found by the
    # full key) or "direct" (irscope/direct)


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


def component(name: object, what: str) -> str:
    """`name` when it can be one path component: a non-empty string of at most NAME_LIMIT bytes with no
    separator, no NUL or other control character, not `.` or `..`; else Damaged naming `what`."""
    if not isinstance(name, str) or name in ("", ".", ".."):
        raise Damaged(f"{what} is {json.dumps(name, default=str)[:60]}, not a name")
    if len(name.encode("utf-8", "surrogatepass")) > NAME_LIMIT:
        raise Damaged(f"{what} is longer than {NAME_LIMIT} bytes")
    if "/" in name or "\\" in name or os.sep in name or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise Damaged(f"{what} {json.dumps(name)[:60]} holds a path separator or a control character")
    return name


def folder_for(out_dir: Path, manifest: Manifest, key: str) -> Path:
    """Where a dump of this manifest goes under out_dir: KERNEL/TARGET-KEY8. Its kernel and target are data
    (an entry of a shared cache): each must be one path component, and the folder stays inside out_dir
    (Damaged otherwise)."""
    kernel = component(manifest["kernel"], f"{MANIFEST} kernel")
    target = component(str(manifest["target"]).replace(":", ""), f"{MANIFEST} target")
    folder = out_dir / kernel / f"{target}-{component(key[:8], 'the key')}"
    root = os.path.realpath(out_dir)
    if os.path.commonpath([root, os.path.realpath(folder)]) != root:
        raise Damaged(f"{kernel}/{target} is outside {out_dir}")
    return folder


def check_key(key: object) -> str:
    """`key` when it names an entry (a hex digest), else Damaged: a key from a record is data."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise Damaged(f"entry key {json.dumps(key, default=str)[:40]} is not a digest")
    return key


def entry_path(key: str) -> Path:
    return cache_dir() / check_key(key)


def read_bytes(path: Path | str, limit: int = JSON_LIMIT) -> bytes:
    """A regular file's bytes, at most `limit` of them: opened without following a symbolic link and
    without blocking (a FIFO, a device, a link is refused before anything is read); OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{os.fspath(path)} is not a regular file")
        if st.st_size > limit:
            raise OSError(f"{os.fspath(path)} is larger than {limit} bytes")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise OSError(f"{os.fspath(path)} grew past {limit} bytes")
        return data
    finally:
        os.close(fd)


def read_json(path: Path | str, limit: int = JSON_LIMIT) -> object:
    """The JSON in a regular file read by read_bytes; ValueError for text that is not JSON, nested past the
    parser or holding an integer past Python's limit; OSError for a file that cannot be read so."""
    data = read_bytes(path, limit)
    try:
        doc = json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if _depth(doc) > _DEPTH_LIMIT:
        raise ValueError(f"nested more than {_DEPTH_LIMIT} deep")
    return doc


def _depth(doc: object) -> int:
    """How deeply lists and objects nest in `doc` (walked without recursion)."""
    deepest, todo = 0, [(doc, 1)]
    while todo:
        value, depth = todo.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > _DEPTH_LIMIT:
            break
        todo.extend((child, depth + 1) for child in children)
    return deepest


def _entry_dir(entry: Path) -> bool:
    """Whether the entry is there: a real folder (Damaged for a link or anything else in its place)."""
    try:
        mode = os.lstat(entry).st_mode
    except FileNotFoundError:
        return False
    except OSError as e:
        raise Damaged(f"unreadable: {e.strerror or e}") from None
    if not stat.S_ISDIR(mode):
        raise Damaged("the entry is a symbolic link" if stat.S_ISLNK(mode) else "the entry is not a folder")
    return True


def lookup(key: str) -> Manifest | None:
    """The manifest of the cached entry for `key`; None on a miss. Raises Damaged for a broken manifest."""
    entry = entry_path(key)
    if not _entry_dir(entry):
        return None
    return _read_manifest(entry)


def _read_manifest(folder: Path) -> Manifest:
    try:
        manifest = read_json(folder / MANIFEST)
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
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device is never read (it could block forever)
            raise OSError(f"{os.fspath(path)} is not a regular file")
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != CHECKSUMS)


def _digest(key: str, sums: dict[str, str]) -> str:
    """The entry's digest: over its key and every file's name and sha256 (an entry moved under another key,
    or a file added, removed or changed with the checksums left as they were, no longer matches)."""
    h = hashlib.sha256(f"irscope-entry\0{key}\0".encode())
    for name in sorted(sums):
        h.update(f"{name}\0{sums[name]}\n".encode())
    return h.hexdigest()


def _write_checksums(folder: Path, key: str) -> None:
    sums = {name: sha256_of(folder / name) for name in _files(folder)}
    doc = {"key": key, "files": sums, "digest": _digest(key, sums)}
    (folder / CHECKSUMS).write_text(json.dumps(doc, indent=0, sort_keys=True))


def _copy_entry(src: Path, dst: Path, depth: int = 0) -> None:
    """Copy an entry's folder without following anything: a symbolic link, a FIFO, a device or a socket in it
    is Damaged (never opened), as is a tree deeper than any dump folder."""
    if depth > _DEPTH_LIMIT:
        raise Damaged("folders nested too deeply")
    dst.mkdir(exist_ok=True)
    with os.scandir(src) as it:
        items = sorted(it, key=lambda e: e.name)
    for item in items:
        mode = item.stat(follow_symlinks=False).st_mode
        rel = f"{item.name!r}" if depth == 0 else f"{item.path!r}"
        if stat.S_ISLNK(mode):
            raise Damaged(f"{rel} is a symbolic link")
        if stat.S_ISDIR(mode):
            _copy_entry(Path(item.path), dst / item.name, depth + 1)
        elif stat.S_ISREG(mode):
            fd = os.open(item.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            with os.fdopen(fd, "rb") as fin:
                if not stat.S_ISREG(os.fstat(fin.fileno()).st_mode):
                    raise Damaged(f"{rel} is not a regular file")
                with open(dst / item.name, "wb") as fout:
                    shutil.copyfileobj(fin, fout, 1 << 20)
        else:
            raise Damaged(f"{rel} is not a regular file")


def _verify(folder: Path, key: str) -> Manifest:
    """Check a copied entry against its checksums and its digest over them and `key`; returns its manifest,
    raises Damaged."""
    try:
        doc = read_json(folder / CHECKSUMS)
    except FileNotFoundError:
        raise Damaged("no checksums") from None
    except (OSError, ValueError) as e:
        raise Damaged(f"checksums unreadable: {e}") from None
    if not isinstance(doc, dict):
        raise Damaged("checksums unreadable")
    sums = doc.get("files")
    if not isinstance(sums, dict) or not all(isinstance(v, str) for v in sums.values()):
        raise Damaged("checksums unreadable")
    if doc.get("key") != key or doc.get("digest") != _digest(key, sums):
        raise Damaged("its digest does not match its key and checksums")
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
    extra = sorted(set(_files(folder)) - set(sums))
    if extra:
        raise Damaged(f"{extra[0]} has no checksum")
    return manifest


def _in_place(entry: Path, key: str, final: Path, manifest: Manifest) -> bool:
    """`final` holds exactly what a restore would put there (the entry's files, by their checksums, and
    this manifest), as after an earlier identical dump into the same folder: nothing to copy."""
    try:
        if not final.is_dir() or final.is_symlink():
            return False
        _verify(entry, key)  # a damaged entry is the caller's to drop and recompile, as on a copy
        sums = read_json(entry / CHECKSUMS)["files"]  # type: ignore[index]
        if sorted(sums) != _files(final) or any(p.is_symlink() for p in final.rglob("*")):
            return False
        if read_json(final / MANIFEST) != manifest:
            return False
        return all(sha256_of(final / name) == digest for name, digest in sums.items() if name != MANIFEST)
    except (OSError, ValueError, TypeError, KeyError, Damaged):
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
        if _in_place(entry, key, final, wanted):
            remove_stale_tmps(final.parent)  # as a write there would
            return final, wanted
        tmp = make_tmp(final)
        try:
            try:
                _copy_entry(entry, tmp)
                manifest = _verify(tmp, key)
            except Damaged as e:
                reason = e
                shutil.rmtree(tmp, ignore_errors=True)
                continue
            except OSError:
                shutil.rmtree(tmp, ignore_errors=True)
                if not os.path.isdir(entry) or os.path.islink(entry):
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
    entry, placed = folder_stamp(entry_path(key), links=False), folder_stamp(final, links=False)
    if entry is None or not placed:
        return None
    stamp = [entry, placed]
    return None if changed_lately(stamp) else stamp


def still_placed(key: str, final: Path, stamp: list | None) -> Manifest | None:
    """The manifest in `final` when neither it nor the entry changed since placed_stamp(); else None."""
    try:
        if not stamp or [folder_stamp(entry_path(key)), folder_stamp(final)] != stamp:
            return None
        if os.path.islink(final) or not _entry_dir(entry_path(key)):
            return None
        manifest = read_json(final / MANIFEST)
    except (OSError, ValueError, Damaged):
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
        _write_checksums(tmp, key)
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
