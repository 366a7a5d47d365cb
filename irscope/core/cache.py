"""irscope's own result cache: an identical repeat dump is a folder copy.

Keyed by compiler.cache_key (kernel code and everything it calls, the spec, the
effective options, target, Triton version and the env knobs Triton hashes). Lives
in $IRSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/irscope, else ~/.cache/irscope.
Entries are whole dump folders, published by rename, so a reader never sees half.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from irscope.core.artifacts import MANIFEST


def cache_dir() -> Path:
    if env := os.environ.get("IRSCOPE_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "irscope"


# The code that decides what a dump folder holds: the compile pipeline, the steering, the job model.
# Views, capture, timing and sweeps show or use dumps but never change one.
_DUMP_CODE = ("core", "steer", "jobs.py")


def code_fingerprint() -> str:
    """Hash of the irscope code that makes dumps: a changed irscope never serves an old result.

    Each file counts by its path, size and modification time (the rule Python itself uses to
    decide that a module's cached bytecode is stale), so a cached re-dump pays for a few dozen
    stat calls rather than reading and hashing every source file.
    """
    h = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    files = [p for part in _DUMP_CODE for p in ([package / part] if part.endswith(".py")
                                                 else (package / part).rglob("*.py"))]
    for path in sorted(files):
        st = path.stat()
        h.update(f"{path.relative_to(package)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def lookup(key: str) -> Path | None:
    entry = cache_dir() / key
    return entry if (entry / MANIFEST).is_file() else None


def store(key: str, folder: Path) -> None:
    """Copy a finished dump folder into the cache; a cache that cannot be written is skipped."""
    root = cache_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key[:8]}.", dir=root))
        shutil.copytree(folder, tmp, dirs_exist_ok=True)
        entry = root / key
        if entry.exists():  # a --no-cache run refreshes the entry
            stale = entry.with_name(f".{key[:8]}.stale.{os.getpid()}")
            os.replace(entry, stale)
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.replace(tmp, entry)
        except OSError:  # another process published it first
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError:
        pass


def restore(entry: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        shutil.copytree(entry, tmp, dirs_exist_ok=True)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
