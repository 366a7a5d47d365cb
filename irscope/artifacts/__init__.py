"""Artifacts: everything one compile produced, and how it is laid out on disk.

Layout of `-o DIR` (kernels, targets and settings never overwrite each other):

    DIR/<kernel>/<target>-<key8>/
        manifest.json          what was compiled, with which settings, stage files, stats
        <kernel>.py            the kernel's Python source
        <kernel>.frontend      the IR straight out of the frontend (before any pass)
        <kernel>.ttir  .ttgir  .llir  .ptx  .cubin  .sass      (NVIDIA)
        <kernel>.ttir  .ttgir  .llir  .amdgcn  .hsaco          (AMD)
        passes/                with --passes: the IR after every MLIR pass + index.json
        map.json               the source map: what each Python line became in every stage (sourcemap.py)
        compile.log            anything the compiler printed, when it printed something

A dump folder is written under a temporary name and renamed into place, so a
failed or interrupted dump never leaves a half-written folder.

Concurrency: a reader (`irscope diff A B`, a view, a cache restore) never sees a dump folder
half-written. A folder is only ever published whole by `publish`: the new version is complete
in a hidden temporary sibling, then swapped with the old one in one atomic step
(renameat2 RENAME_EXCHANGE on Linux; elsewhere, or on a file system without it, a rename-aside
and rename under a per-folder flock, where a reader can at worst find the folder briefly
absent, never partial). Any number of processes may publish the same folder at once. A reader
that opens several files of a folder one by one while it is being replaced may get them from
successive versions, each whole; for one folder name (one cache key) these are the same compile.
Temporaries left by a killed process (hidden, named `.irscope-tmp-*`) are removed by the next
write into the same folder once they are an hour old.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from irscope import stages
from irscope.artifacts import schema
from irscope.errors import BadInput
from irscope.kernel import jsonfile
from irscope.records import Manifest, PassEntry, PinCheck, RecipeRef, SourceMap, Stats

MANIFEST = "manifest.json"
MAP_FILE = "map.json"  # the source map (artifacts/sourcemap.py)

# every temporary folder or file irscope makes next to what it publishes starts with this
TMP_PREFIX = ".irscope-tmp-"
STALE_AFTER_S = 3600.0


@dataclass
class PassRecord:
    index: int
    stage: str
    name: str  # e.g. TritonGPUCoalesce
    arg: str  # e.g. tritongpu-coalesce
    added: int = 0  # lines added by this pass (after vs before)
    removed: int = 0
    file: str = ""  # passes/NNN-Name.mlir (IR after the pass), relative to the dump folder

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)

    @classmethod
    def of(cls, entry: PassEntry) -> PassRecord:
        """Read back from its record (keys a newer irscope added are left out)."""
        return cls(
            entry["index"],
            entry["stage"],
            entry["name"],
            entry["arg"],
            entry.get("added", 0),
            entry.get("removed", 0),
            entry["file"],
        )

    def entry(self) -> PassEntry:
        """Its record in manifest.json and passes/index.json."""
        return {
            "index": self.index,
            "stage": self.stage,
            "name": self.name,
            "arg": self.arg,
            "added": self.added,
            "removed": self.removed,
            "file": self.file,
        }


@dataclass
class Artifacts:
    kernel: str
    file: str
    target: str
    target_reason: str
    signature: str
    args: dict[str, str]  # parameter -> spec element (replayable)
    options: dict[str, Any]  # effective options, as Triton compiled them
    user_options: dict[str, Any]  # what --set (and later recipes) changed
    option_sources: dict[str, str]
    env: dict[str, str]
    stages: dict[str, str | bytes]  # ordered: source, frontend, ttir, ttgir, llir, ptx, cubin, sass
    times_ms: dict[str, float]
    metadata: dict[str, Any]
    triton_version: str
    ptxas_log: str = ""
    compile_log: str = ""
    notes: list[str] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)
    passes: list[PassRecord] | None = None
    pass_texts: list[str | None] | None = None  # IR after each pass (None where not dumped)
    key: str = ""
    folder: Path | None = None  # set once written
    compiled: Any = None  # Triton's CompiledKernel (in memory only; for launching on a GPU)
    reused: bool = False  # in memory only: the stages came from the script's own compile (compiler.Prebuilt)
    pins: list[PinCheck] = field(default_factory=list)  # each pin/option set and its check (steer/checks.py)
    recipe: RecipeRef | None = None  # {"name", "path", "variant", "target"} of the recipe applied
    source_map: SourceMap | None = None  # map.json (artifacts/sourcemap.build)
    extras: dict[str, str | bytes] = field(default_factory=dict)  # outputs that are no compiler stage (fbtriton's
    #                                    launch_metadata, launcher_src): files in the folder, listed under "files"

    def stage_files(self) -> dict[str, str]:
        return {name: stage_filename(self.kernel, name) for name in self.stages}

    def manifest(self) -> Manifest:
        return {
            "irscope": 1,
            "kernel": self.kernel,
            "file": self.file,
            "target": self.target,
            "target_reason": self.target_reason,
            "signature": self.signature,
            "args": self.args,
            "triton_version": self.triton_version,
            "options": self.options,
            "user_options": self.user_options,
            "option_sources": self.option_sources,
            "env": self.env,
            "stages": self.stage_files(),
            "times_ms": self.times_ms,
            "metadata": self.metadata,
            "stats": self.stats,
            "notes": self.notes,
            "passes": None if self.passes is None else [p.entry() for p in self.passes],
            "key": self.key,
            "recipe": self.recipe,
            "pins": self.pins,
            "map": MAP_FILE if self.source_map is not None else None,
            "files": {name: stage_filename(self.kernel, name) for name in self.extras},
        }


def stage_filename(kernel: str, stage: str) -> str:
    return f"{kernel}.py" if stage == "source" else f"{kernel}.{stage}"


def folder_for(out_dir: Path, art: Artifacts) -> Path:
    slug = art.target.replace(":", "")
    return out_dir / art.kernel / f"{slug}-{art.key[:8]}"


def write(art: Artifacts, out_dir: Path) -> Path:
    """Write all files under a temporary name, then rename into place."""
    final = folder_for(out_dir, art)
    tmp = make_tmp(final)
    try:
        write_into(art, tmp)
        publish(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    art.folder = final
    return final


def write_whole(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write one file whole or not at all: a temporary file beside it (.irscope-tmp-*), renamed into place
    (a reader sees the old file or the new one, never half of it). OSError as it came; no temporary left."""
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def make_tmp(final: Path) -> Path:
    """A fresh hidden temporary folder next to `final` (whose parent is created); clears stale ones."""
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_tmps(final.parent)
    return Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{final.name}.", dir=final.parent))


def remove_stale_tmps(folder: Path, max_age_s: float = STALE_AFTER_S) -> None:
    """Remove irscope's temporaries in `folder` older than max_age_s (left by a killed process)."""
    cutoff = time.time() - max_age_s
    try:
        with os.scandir(folder) as it:
            stale = [
                e.path
                for e in it
                if e.name.startswith(TMP_PREFIX)
                and not e.name.endswith(".lock")
                and e.stat(follow_symlinks=False).st_mtime < cutoff
            ]
    except OSError:
        return
    for path in stale:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def write_into(art: Artifacts, folder: Path) -> None:
    for name, content in {**art.stages, **art.extras}.items():
        path = folder / stage_filename(art.kernel, name)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    if art.compile_log.strip():
        (folder / "compile.log").write_text(art.compile_log)
    if art.ptxas_log.strip():
        (folder / "ptxas.log").write_text(art.ptxas_log)
    if art.passes is not None and art.pass_texts is not None:
        pdir = folder / "passes"
        pdir.mkdir()
        for rec, text in zip(art.passes, art.pass_texts):
            header = (
                f"// irscope: IR after pass {rec.index} {rec.name} ({rec.arg}) in stage {rec.stage}; "
                f"+{rec.added} -{rec.removed} lines\n"
            )
            (folder / rec.file).write_text(
                header
                + (
                    text
                    if text is not None
                    else "// (not dumped: the module is translated to LLVM IR next; see the llir stage)\n"
                )
            )
        index: list[PassEntry] = [p.entry() for p in art.passes]
        (pdir / "index.json").write_text(json.dumps(index, indent=1))
    if art.source_map is not None:
        (folder / MAP_FILE).write_text(json.dumps(art.source_map, separators=(",", ":")))
    (folder / MANIFEST).write_text(json.dumps(art.manifest(), indent=1, default=str))


def publish(tmp: Path, final: Path) -> None:
    """Put the complete folder `tmp` in place as `final`, replacing any older `final`, atomically.

    Safe when several processes publish the same `final` at once: the last one wins, none fails,
    and a reader of `final` sees one whole version or the other (see the module docstring).
    """
    for _ in range(100):
        try:
            os.rename(tmp, final)  # no final yet (or an empty one): done
            return
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.EISDIR):
                raise
        swapped = _exchange(tmp, final)
        if swapped is True:  # tmp now holds the old version
            shutil.rmtree(tmp, ignore_errors=True)
            return
        if swapped is None:  # no atomic exchange here: rename aside under a lock
            _replace_locked(tmp, final)
            return
        # False: final vanished between the two calls (another writer); try the rename again
    raise OSError(errno.EBUSY, f"could not publish {final}: too many concurrent writers")


def _exchange(a: Path, b: Path) -> bool | None:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE): True done, False b is gone, None unsupported."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return None
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.ENOENT and os.path.exists(a):
        return False
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return None
    raise OSError(err, f"{os.strerror(err)}: {a} <-> {b}")


def _replace_locked(tmp: Path, final: Path) -> None:
    lock = final.with_name(f"{TMP_PREFIX}{final.name}.lock")
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        old = None
        if os.path.lexists(final):
            old = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{final.name}.old.", dir=final.parent))
            os.replace(final, old / "dir")
        os.rename(tmp, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def read_manifest(folder: Path) -> Manifest:
    """A dump folder's manifest.json, checked against its record's schema (artifacts/schema.py): a damaged
    or foreign manifest is one BadInput line naming the file and the field."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise BadInput(f"{folder}: not an irscope dump folder (no {MANIFEST})")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise BadInput(f"{folder}: {MANIFEST} is unreadable ({e.strerror or e})") from None
    doc = jsonfile.parse_text(raw, folder, MANIFEST)
    if not isinstance(doc, dict) or "irscope" not in doc:
        why = 'no "irscope" field' if isinstance(doc, dict) else "not a JSON object"
        raise BadInput(f"{folder}: not an irscope dump folder ({MANIFEST} is not irscope's: {why})")
    jsonfile.validate(doc, schema.MANIFEST, folder, MANIFEST)
    return cast(Manifest, doc)  # checked against its schema above


def inside(folder: Path | str, name: Any, field: str, remedy: str = "dump it again") -> Path:
    """The file a folder's JSON names (`field` says where: "manifest.json stages.ptx"), checked to be a
    regular file inside `folder` once symbolic links are followed.

    A dump folder is data that travels between people: a name that is absolute, climbs out with
    `..`, or is a link to a file elsewhere (or to a device, a FIFO) would make irscope read, print or
    embed a file the folder's author chose. Every read of a file a folder's JSON names goes through
    here; anything else is one BadInput line naming the field (and, for a missing file, `remedy`).
    """
    folder = Path(folder)
    if not isinstance(name, str) or not name.strip():
        raise BadInput(
            f"{folder / MANIFEST if field.startswith(MANIFEST) else folder}: {field} is "
            f"{json.dumps(name, default=str)[:80]}, not a file name inside the folder"
        )
    root = os.path.realpath(folder)
    real = os.path.realpath(os.path.join(root, name))
    if os.path.isabs(name) or os.path.commonpath([root, real]) != root or real == root:
        raise BadInput(
            f"{folder}: {field} names {name!r}, which is outside the folder; a dump folder's "
            f"files are read only from inside it"
        )
    try:
        mode = os.stat(real).st_mode
    except OSError as e:
        raise BadInput(
            f"{folder}: {field} names {name!r}, which is missing or unreadable ({e.strerror or e}); {remedy}"
        ) from None
    if not stat.S_ISREG(mode):
        raise BadInput(f"{folder}: {field} names {name!r}, which is not a regular file; {remedy}")
    return Path(real)


def decode(raw: bytes, folder: Path | str, name: str, field: str, remedy: str = "dump it again") -> str:
    """A text file of a folder as text: BadInput naming the field when it is not UTF-8 (a binary file
    where a stage's text belongs)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(
            f"{folder}: {field} names {name!r}, which is not UTF-8 text (byte {e.start}: a binary file?); {remedy}"
        ) from None


def read_text(folder: Path | str, name: Any, field: str, remedy: str = "dump it again") -> str:
    """The text file a folder's JSON names (`inside`, then read and decoded): BadInput otherwise."""
    path = inside(folder, name, field, remedy)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise BadInput(f"{folder}: {field} names {name!r}, which is unreadable ({e.strerror or e}); {remedy}") from None
    return decode(raw, folder, name, field, remedy)


def read_stage(folder: Path, manifest: Manifest, stage: str) -> str | bytes:
    name = manifest["stages"][stage]
    if stage in stages.BINARY:
        return inside(folder, name, f"{MANIFEST} stages.{stage}").read_bytes()
    return read_text(folder, name, f"{MANIFEST} stages.{stage}")
