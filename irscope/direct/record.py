"""A record of the cache's direct mode: its key, where it lives, and what a full run depended on.

A record is `$IRSCOPE_CACHE_DIR/.irscope-direct/<key>.json`. Its key is the command line *as typed*
(argv, never parsed here) with where and how it runs: the working folder, sys.path and the
environment's watched names as the process started, the interpreter and irscope's whole code
(`key`). The CLI writes it after click parsed that argv, so it holds the parsed request as data: the
command, the -o folder, the view's options, the output as it printed to a pipe and the exit status
(recorder.py), and what the run depended on (`depends`):

    files    every Python module the process had loaded outside the standard library, Triton and
             irscope (the kernel file, the helpers whose @jit functions it calls, whatever they
             import), every file the kernel file's import opened, and the other files the request
             read (a recipe, a spec file): path, size, mtime, ctime, inode and sha256
    absent   paths that must stay absent (a recipe of that name in a folder earlier on
             $IRSCOPE_RECIPES than the one it was found in)
    dirs     every folder on the import path (the kernel's folder first): mtime and the names of
             what could be imported from it, so a new module that would shadow a recorded one
             is seen
    triton   where `import triton` would find the package, and the version in the installed
             metadata (the dist-info of whichever distribution provides it), with the
             metadata's and libtriton's stat
    env      the environment variables Triton's key reads (every TRITON_/MLIR_/LLVM_/... name:
             a superset of adapter.cache_invalidating_env), the ones the kernel file read while
             it was imported (all of them if it iterated os.environ), and those rich's output
             depends on

`holds` says whether all of it still holds. A file is checked by its content, as ccache's direct mode
hashes every input: its sha256 (a few hundred KB in all, about a millisecond), so an edit that keeps the
size with the times put back, within one tick of the clock or not, is seen; a file whose stat moved but
whose content did not has its new stat written back. Nothing here imports Triton.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import sys
from collections.abc import Iterable
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

from irscope.artifacts import write_whole
from irscope.compile import cache
from irscope.version import __version__

# what a record may change in a served manifest: what belongs to the run, not to the compile (an entry is
# shared by runs that reach the same compile: one that set num_warps=4 and one that left it at its default)
EDITED = ("file", "target_reason", "option_sources", "user_options", "notes")

RECORD_DIR = ".irscope-direct"  # hidden: the cache's entries are its other names
SCHEMA = 3
# Triton's cache-invalidating variables all start so (3.6 - 3.9: ALLOW_LHS_TMEM_LAYOUT_CONVERSION,
# AMDGCN_*, DISABLE_*, LLVM_*, MLIR_*, NVPTX_*, TRITON_*, USE_IR_LOC); the rest are irscope's own
# knobs and the toolkit's
ENV_PREFIXES = (
    "TRITON_",
    "MLIR_",
    "LLVM_",
    "AMDGCN_",
    "NVPTX_",
    "DISABLE_",
    "ENABLE_",
    "USE_",
    "ALLOW_",
    "IRSCOPE_",
    "PTXAS",
    "CUDA",
    "ROCM",
    "HIP_",
    "NVIDIA_",
)
# rich's colour and width, and the import path
ENV_NAMES = (
    "FORCE_COLOR",
    "NO_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "COLUMNS",
    "LINES",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
    "PYTHONPATH",
)
_IMPORTABLE = (".py", ".pyc", ".so", ".pyd", ".pth", ".egg-link")


def package_fingerprint() -> str:
    """Every irscope source file by path, size and mtime: the views too (the output is replayed)."""
    h = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    for root, dirs, names in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                st = os.stat(os.path.join(root, name))
                h.update(f"{root}/{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def watched_env_names(env=None) -> set[str]:
    """The variables a record keeps: every name Triton's key or the toolkit may read, and rich's."""
    return {n for n in (os.environ if env is None else env) if n.startswith(ENV_PREFIXES)} | set(ENV_NAMES)


def env_snapshot(names, env=None) -> dict[str, str | None]:
    """These variables' values (None: unset) in `env`, os.environ by default."""
    env = os.environ if env is None else env
    return {n: env.get(n) for n in names}


def key(argv: list[str], path: list[str], env: dict[str, str], cwd: str) -> str:
    """The record's key: the command line as typed, where and how it runs."""
    payload = {
        "schema": SCHEMA,
        "irscope": __version__,
        "code": package_fingerprint(),
        "python": [sys.executable, sys.version],
        "path": path,
        "cwd": cwd,
        "argv": argv,
        "env": env_snapshot(sorted(watched_env_names(env)), env),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


SECRET = "mac-secret"  # in RECORD_DIR (not hidden: temporaries are): the key of every record's MAC, readable by its owner only


def record_path(key: str) -> Path:
    return cache.cache_dir() / RECORD_DIR / f"{key}.json"


def _private_dir(create: bool) -> Path | None:
    """The records' folder when it is a real folder of this user that no one else may write into (made so
    when `create`); None otherwise: records made by anyone else are never served (docs/guides/threat-model.md, "The cache and whom it trusts")."""
    folder = cache.cache_dir() / RECORD_DIR
    try:
        if create:
            folder.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                pass
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            return None
        if st.st_mode & 0o077:
            if not create:
                return None
            os.chmod(folder, 0o700)
    except OSError:
        return None
    return folder


def _secret(create: bool) -> bytes | None:
    """The records' secret (32 random bytes in a 0600 file of this user inside the private folder)."""
    folder = _private_dir(create)
    if folder is None:
        return None
    path = folder / SECRET
    if create:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass
        except OSError:
            return None
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(os.urandom(32))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        data = fh.read(64)
    return data if len(data) == 32 else None


def _mac(secret: bytes, key: str, doc: dict[str, Any]) -> str:
    body = json.dumps({k: v for k, v in doc.items() if k != "mac"}, sort_keys=True)
    return hmac.new(secret, f"{key}\0{body}".encode(), hashlib.sha256).hexdigest()


def read(key: str) -> dict[str, Any] | None:
    """The record under `key` as this user's irscope wrote it (this schema, its MAC checked with the
    records' secret), or None: a record is read as data (cache.read_json: a regular file, not a link,
    bounded in size and nesting) and one that anyone else wrote or changed is never served."""
    secret = _secret(create=False)
    if secret is None:
        return None
    try:
        doc = cache.read_json(record_path(key))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("mac"), str):
        return None
    return doc if hmac.compare_digest(doc["mac"], _mac(secret, key, doc)) else None


def write(key: str, doc: dict[str, Any]) -> None:
    """A record written whole (a reader never sees half of one) with its MAC; a cache that cannot be written
    (or whose records' folder is not this user's alone) is skipped."""
    secret = _secret(create=True)
    if secret is None:
        return
    path = record_path(key)
    doc = {**doc, "schema": SCHEMA}
    doc["mac"] = _mac(secret, key, doc)
    try:
        write_whole(path, json.dumps(doc).encode())
    except OSError:
        return


# ---------------------------------------------------------------- what a run depended on


def _names(folder: str) -> str | None:
    """A digest of what could be imported from `folder` (modules, packages, .pth files); None if absent."""
    try:
        entries = sorted(
            e.name for e in os.scandir(folder) if e.name.endswith(_IMPORTABLE) or (e.name.isidentifier() and e.is_dir())
        )
    except OSError:
        return None
    return hashlib.sha256("\0".join(entries).encode()).hexdigest()


def _dir_state(folder: str) -> list | None:
    try:
        mtime = os.stat(folder).st_mtime_ns
    except OSError:
        return None
    return [mtime, _names(folder)]


def _metadata_version(metadata: str) -> str | None:
    """The Version: line of a dist-info's METADATA (what importlib.metadata reports)."""
    with open(metadata, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
            if not line.strip():
                break
    return None


def _triton_origin(search: list[str]) -> str | None:
    spec = PathFinder.find_spec("triton", search)
    return spec.origin if spec is not None else None


def _find_dist_info(package_dir: Path) -> Path | None:
    """The dist-info that installed this triton package (triton, fbtriton, pytorch-triton...): the one
    beside it whose RECORD lists triton/__init__.py."""
    site = package_dir.parent
    try:
        infos = sorted(
            (p for p in site.iterdir() if p.name.endswith(".dist-info")), key=lambda p: "triton" not in p.name.lower()
        )
    except OSError:
        return None
    for info in infos:
        try:
            with open(info / "RECORD", encoding="utf-8", errors="replace") as fh:
                if any(line.startswith("triton/__init__.py,") for line in fh):
                    return info
        except OSError:
            continue
    return None


def _stat(path: str) -> list[int] | None:
    """size and mtime (what marks Triton's own files: another install rewrites them)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def file_stat(path: str) -> list[int] | None:
    """size, mtime, ctime and inode (git's index rule: a write moves the ctime, which nothing sets back)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def triton_state(search: list[str]) -> dict[str, Any] | None:
    """Which Triton `import triton` would find on `search`, read without importing it: its origin, the
    installed version in its dist-info and the metadata's and libtriton's stat; None when none is found."""
    origin = _triton_origin(search)
    if origin is None:
        return None
    package = Path(origin).parent
    info = _find_dist_info(package)
    if info is None:
        return None
    metadata = str(info / "METADATA")
    libs = sorted(str(p) for p in (package / "_C").glob("libtriton*")) if (package / "_C").is_dir() else []
    return {
        "origin": origin,
        "metadata": metadata,
        "metadata_stat": _stat(metadata),
        "version": _metadata_version(metadata),
        "libs": {p: _stat(p) for p in libs},
    }


def _skip_module(name: str) -> bool:
    top = name.split(".")[0]
    return top in sys.stdlib_module_names or top in ("irscope", "triton", "__main__")


def depends(
    kernel_file: Path,
    opened: set[str],
    env_read: set[str] | None,
    triton_env: dict[str, str],
    start_path: list[str],
    start_env: dict[str, str],
    inputs: Iterable[Path] = (),
    absent: Iterable[Path] = (),
) -> dict[str, Any] | None:
    """What a full run that loaded `kernel_file` depended on (the module docstring's files, absent, dirs,
    triton, env); None when no Triton is found on the start's path.

    `opened` and `env_read` are what the kernel file's import opened and read (kernel.loader;
    env_read None: it read the whole environment); `triton_env` is adapter.cache_invalidating_env().
    `inputs` are the other files the request read (a recipe, a spec file), kept by content like the
    kernel's; `absent` the paths that must stay absent.
    """
    search = [str(kernel_file.resolve().parent)] + [p for p in start_path if p]
    triton = triton_state(search)
    if triton is None:
        return None
    triton_root = str(Path(triton["origin"]).parent) + os.sep
    paths = {str(kernel_file.resolve())} | {str(Path(p).resolve()) for p in inputs}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and not _skip_module(name):
            paths.add(os.path.abspath(file))
    for path in opened:
        if "__pycache__" not in path and not path.endswith(".pyc"):
            paths.add(os.path.abspath(path))
    files = {}
    for path in sorted(paths):
        if path.startswith(triton_root) or not os.path.isfile(path):
            continue
        st = file_stat(path)
        if st is not None:
            files[path] = st + [cache.sha256_of(path)]
    env: dict[str, str | None]
    if env_read is None:
        env = dict(start_env)
    else:
        env = env_snapshot(watched_env_names(start_env) | set(env_read) | set(triton_env), start_env)
    return {
        "files": files,
        "dirs": {d: _dir_state(d) for d in dict.fromkeys(search)},
        "triton": triton,
        "env": env,
        "whole_env": env_read is None,
        "absent": sorted(os.path.abspath(p) for p in absent),
    }


def holds(doc: dict[str, Any]) -> tuple[dict[str, list], dict[str, list]] | None:  # noqa: C901
    """None when anything the record depended on changed; else the files and folders whose stat moved
    but whose content (names, for a folder) did not, with their new state (to be written back)."""
    env = doc["env"]
    if doc["whole_env"]:
        if env != dict(os.environ):
            return None
    elif env_snapshot(env) != env or not watched_env_names() <= set(env):
        return None
    triton = doc["triton"]
    if _triton_origin(list(doc["dirs"])) != triton["origin"] or _stat(triton["metadata"]) != triton["metadata_stat"]:
        return None
    if _metadata_version(triton["metadata"]) != triton["version"]:
        return None
    if any(_stat(p) != st for p, st in triton["libs"].items()):
        return None
    if any(os.path.lexists(p) for p in doc["absent"]):
        return None
    dirs = {}
    for folder, state in doc["dirs"].items():
        st = _stat(folder)
        if state is None or st is None:
            if (state is None) != (st is None):
                return None
            continue
        if st[1] != state[0]:
            now = _dir_state(folder)
            if now is None or now[1] != state[1]:
                return None
            dirs[folder] = now
    files = {}
    for path, recorded in doc["files"].items():
        *stamp, digest = recorded
        st = file_stat(path)
        if st is None or st[0] != stamp[0] or cache.sha256_of(path) != digest:
            return None  # by content, always: a same-size edit with its times put back is seen
        if st != stamp:
            files[path] = st + [digest]
    return files, dirs
