"""The cache's direct mode: a repeat of `dump`, `passes`, `lines` or `diff` served from the command line
alone, without importing Triton, torch or the kernel file (as ccache's direct mode skips the preprocessor).

The full key (compiler.cache_key) needs Triton and the loaded kernel: its code and everything it
calls. A full dump therefore leaves, beside its cache entry, a *record* under a key computed from
the request as typed (`request_key`: the command, file, kernels, signature, --arg/--const, target,
--set in order, --recipe, --variant, the --pin-* options, -o, the view's flags, the working folder,
sys.path, the interpreter and irscope's whole code). The record,
`$IRSCOPE_CACHE_DIR/.irscope-direct/<key>.json`, lists what that dump depended on:

    entries  the full keys it was served from (one per kernel, variant or diff side), with the
             manifest fields this request stamps on a hit (file, target_reason, option_sources,
             notes), and once served, the folder it went to with every file's stat (`placed`:
             size, mtime, ctime, inode of the folder's and the entry's files), so a repeat into
             an untouched folder skips the checksums
    files    every Python module the process had loaded at the end of the dump outside the
             standard library, Triton and irscope (the kernel file, the helpers whose @jit
             functions it calls, whatever they import), and every file the kernel file's import
             opened, and the other files the request read (a recipe, a spec file): path, size,
             mtime and sha256
    absent   paths that must stay absent (a recipe of that name in a folder earlier on
             $IRSCOPE_RECIPES than the one it was found in)
    dirs     every folder on the import path (the kernel's folder first): mtime and the names of
             what could be imported from it, so a new module that would shadow a recorded one
             is seen
    triton   where `import triton` would find the package, and the version in the installed
             metadata (the dist-info of whichever distribution provides it), with the
             metadata's and libtriton's size and mtime
    env      the environment variables Triton's key reads (every TRITON_/MLIR_/LLVM_/... name:
             a superset of adapter.cache_invalidating_env), the ones the kernel file read while
             it was imported (all of them if it iterated os.environ), and those rich's output
             depends on
    summary  the command's output as it printed to a pipe (replayed as text when stdout is not a
             terminal; dump --json is rendered, as it says how the dump was served), and
    status   its exit status (passes --first found nothing: 1; diff: 0 equal, 1 different)

A record is written only where the target did not come from this machine's GPU (the flag, a side's
--a-target, a recipe, a spec file), and not for a spec file of a captured script (it loads on the
stand-in GPU unless one is local).

`lookup` serves a record only when every one of those still holds; a file whose size or mtime
moved is hashed, and kept (its new stat written back) only when its content is the same. Any
doubt — a missing record or entry, a changed file, a new environment variable, another Triton —
returns None and the command takes the full path, which compiles or finds the entry by its full
key and writes a fresh record. Nothing here imports Triton.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

from irscope.artifacts import MANIFEST, write_whole
from irscope.compile import cache
from irscope.version import __version__

RECORD_DIR = ".irscope-direct"   # hidden: the cache's entries are its other names
SCHEMA = 2
# Triton's cache-invalidating variables all start so (3.6 - 3.9: ALLOW_LHS_TMEM_LAYOUT_CONVERSION,
# AMDGCN_*, DISABLE_*, LLVM_*, MLIR_*, NVPTX_*, TRITON_*, USE_IR_LOC); the rest are irscope's own
# knobs and the toolkit's
ENV_PREFIXES = ("TRITON_", "MLIR_", "LLVM_", "AMDGCN_", "NVPTX_", "DISABLE_", "ENABLE_", "USE_", "ALLOW_",
                "IRSCOPE_", "PTXAS", "CUDA", "ROCM", "HIP_", "NVIDIA_")
# rich's colour and width, and the import path
ENV_NAMES = ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES",
             "JUPYTER_COLUMNS", "JUPYTER_LINES", "PYTHONPATH")
_IMPORTABLE = (".py", ".pyc", ".so", ".pyd", ".pth", ".egg-link")

START_PATH: list[str] | None = None   # sys.path as the process started (entry.main sets it)
START_ENV: dict[str, str] = {}        # the environment as the process started (a compile sets variables)


def begin() -> None:
    """Note the import path and the environment before anything changes them (the loader puts the
    kernel's folder first on the path; a compile sets Triton's variables for its duration)."""
    global START_PATH, START_ENV
    START_PATH = list(sys.path)
    START_ENV = dict(os.environ)


def package_fingerprint() -> str:
    """Every irscope source file by path, size and mtime: the views too (the summary is replayed)."""
    h = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    for root, dirs, names in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                st = os.stat(os.path.join(root, name))
                h.update(f"{root}/{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


_REQUEST = {"kernels": (), "signature": None, "args": (), "consts": (), "target": None, "sets": (), "recipe": None,
            "variants": (), "pin_layouts": (), "pin_loops": (), "pin_partitions": (), "out": "irscope-out",
            "passes": False}


def request_fields(command: str, file: str, view: dict[str, Any], **given: Any) -> dict:
    """What identifies a request for the direct mode: the command, its kernel-file options as typed (keys of
    _REQUEST; irscope.entry reads them from the command line, the CLI records under the same) and the view's
    own flags (`view`: --json, --first, --sort...). Lists stay in order: --set's last wins."""
    fields = dict(_REQUEST)
    for key, value in given.items():
        if key not in _REQUEST:
            raise TypeError(key)
        fields[key] = list(value) if isinstance(value, (list, tuple)) else value
    fields = {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}
    fields["out"] = str(Path(fields["out"]))
    fields["passes"] = bool(fields["passes"])
    return {"command": command, "file": str(Path(file)), **fields, "view": dict(sorted(view.items()))}


def request_key(fields: dict[str, Any]) -> str | None:
    """The record's key: the request as typed, where and how it runs; None before begin()."""
    if START_PATH is None:
        return None
    payload = {"schema": SCHEMA, "irscope": __version__, "code": package_fingerprint(),
               "python": [sys.executable, sys.version], "path": START_PATH, "cwd": os.getcwd(), **fields}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def record_path(key: str) -> Path:
    return cache.cache_dir() / RECORD_DIR / f"{key}.json"


# ---------------------------------------------------------------- what a dump depended on


def _names(folder: str) -> str | None:
    """A digest of what could be imported from `folder` (modules, packages, .pth files); None if absent."""
    try:
        entries = sorted(e.name for e in os.scandir(folder)
                         if e.name.endswith(_IMPORTABLE) or (e.name.isidentifier() and e.is_dir()))
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
        infos = sorted((p for p in site.iterdir() if p.name.endswith(".dist-info")),
                       key=lambda p: "triton" not in p.name.lower())
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
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


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
    return {"origin": origin, "metadata": metadata, "metadata_stat": _stat(metadata),
            "version": _metadata_version(metadata), "libs": {p: _stat(p) for p in libs}}


def env_snapshot(names, env=None) -> dict[str, str | None]:
    """These variables' values (None: unset) in `env`, os.environ by default."""
    env = os.environ if env is None else env
    return {n: env.get(n) for n in names}


def watched_env_names(env=None) -> set[str]:
    """The variables a record keeps: every name Triton's key or the toolkit may read, and rich's."""
    return {n for n in (os.environ if env is None else env) if n.startswith(ENV_PREFIXES)} | set(ENV_NAMES)


def _skip_module(name: str) -> bool:
    top = name.split(".")[0]
    return top in sys.stdlib_module_names or top in ("irscope", "triton", "__main__")


def remember(fields: dict[str, Any], results: list, kernel_file: Path, opened: set[str],  # noqa: PLR0913
             env_read: set[str] | None, summary: str | None, triton_env: dict[str, str],
             inputs: Iterable[Path] = (), absent: Iterable[Path] = (), status: int = 0) -> None:
    """Write the record of a full dump that just succeeded (results: dump.DumpResult, one per kernel).

    `opened` and `env_read` are what the kernel file's import opened and read (kernel.loader;
    env_read None: it read the whole environment); `triton_env` is adapter.cache_invalidating_env().
    `inputs` are the other files the request read (a recipe, a spec file), kept by content like the
    kernel's; `absent` the paths that must stay absent (a recipe folder earlier on $IRSCOPE_RECIPES
    than the one the recipe was found in). `summary` is the command's output as it printed to a
    pipe and `status` its exit status. A cache that cannot be written is skipped.
    """
    key = request_key(fields)
    if key is None:
        return
    search = [str(kernel_file.resolve().parent)] + [p for p in START_PATH if p]
    triton = triton_state(search)
    if triton is None:
        return
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
        st = _stat(path)
        if st is not None:
            files[path] = st + [cache.sha256_of(path)]
    if env_read is None:
        env = dict(START_ENV)
    else:
        env = env_snapshot(watched_env_names(START_ENV) | set(env_read) | set(triton_env), START_ENV)
    doc = {
        "schema": SCHEMA,
        "entries": [{"key": r.key, "edit": {k: r.manifest.get(k) for k in
                                            ("file", "target_reason", "option_sources", "notes")}}
                    for r in results],
        "files": files,
        "dirs": {d: _dir_state(d) for d in dict.fromkeys(search)},
        "triton": triton,
        "env": env,
        "whole_env": env_read is None,
        "absent": sorted(os.path.abspath(p) for p in absent),
        "summary": summary,
        "status": status,
    }
    write_record(record_path(key), doc)


def write_record(path: Path, doc: dict[str, Any]) -> None:
    """A record written whole (a reader never sees half of one); a cache that cannot be written is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, json.dumps(doc).encode())
    except OSError:
        return


# ---------------------------------------------------------------- serving


def lookup(fields: dict[str, Any]) -> dict[str, Any] | None:
    """The record for this request if everything it depended on still holds, else None."""
    key = request_key(fields)
    if key is None:
        return None
    path = record_path(key)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        return None
    try:
        fresh = _holds(doc)
    except (OSError, KeyError, TypeError, ValueError):
        return None
    if fresh is None:
        return None
    if fresh[0] or fresh[1]:  # same content under a new mtime: written back, so the next run is stat-only
        doc["files"].update(fresh[0])
        doc["dirs"].update(fresh[1])
        write_record(path, doc)
    doc["_record"] = str(path)  # where serve writes a folder's stamp back
    return doc



def _holds(doc: dict[str, Any]) -> tuple[dict[str, list], dict[str, list]] | None:  # noqa: C901
    """None when anything the record depended on changed; else the files and folders whose mtime
    moved but whose content (names, for a folder) did not, with their new state."""
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
    for path, (size, mtime, digest) in doc["files"].items():
        st = _stat(path)
        if st == [size, mtime]:
            continue
        if st is None or st[0] != size or cache.sha256_of(path) != digest:
            return None
        files[path] = st + [digest]
    return files, dirs


def serve(doc: dict[str, Any], out_dir: Path) -> list[tuple[Path, dict[str, Any], str]] | None:
    """Copy every entry the record names to its folder under out_dir: [(folder, manifest, key)].

    A folder that neither it nor its entry changed since an earlier serve checked it (cache.placed_stamp,
    kept in the record lookup read) is served as it is, without reading the checksums again. None when
    an entry is gone or damaged: the command then takes the full path, which says so, drops the entry
    and recompiles.
    """
    out = []
    stamped = False
    for item in doc["entries"]:
        key, stamp = item["key"], item["edit"]
        placed = item.get("placed") or {}
        if placed.get("out") == str(out_dir):
            manifest = cache.still_placed(key, Path(placed["folder"]), placed.get("stamp"))
            if manifest is not None:
                out.append((Path(placed["folder"]), manifest, key))
                continue

        def edit(manifest: dict[str, Any], stamp=stamp) -> dict[str, Any]:
            manifest.update(stamp)
            return manifest

        try:
            hit = cache.restore(key, lambda m, key=key: cache.folder_for(out_dir, m, key), edit)
        except cache.Damaged:
            return None
        if hit is None:
            return None
        item["placed"] = {"out": str(out_dir), "folder": str(hit[0]), "stamp": cache.placed_stamp(key, hit[0])}
        stamped = stamped or item["placed"]["stamp"] is not None
        out.append((hit[0], hit[1], key))
    if stamped and doc.get("_record"):
        write_record(Path(doc["_record"]), {k: v for k, v in doc.items() if k != "_record"})
    return out


# ---------------------------------------------------------------- from a command's request

# where a target can come from that does not depend on this machine (kernel.targets, jobs.choose_target):
# the flag (--target, a diff side's --a-target), a recipe, a spec file; "local GPU" and "default (no GPU
# here)" ask the driver, which a record cannot
_FIXED_TARGET = ("requested", "--", "recipe ", "from ")


def kernel_file(request: Any, spec_doc: dict | None) -> Path | None:
    """The kernel file whose import the record watched: FILE, or the file a spec file names; None when
    the request is not one the direct mode serves: the Python API's loaded kernels, a file that is
    neither .py nor a spec file, a spec file of a captured script (it loads on the stand-in GPU unless
    a GPU is local, which a record cannot see), or a kernel file whose import was not observed."""
    from irscope.kernel import loader

    if START_PATH is None or getattr(request, "loaded", ()):
        return None
    if spec_doc is not None:
        if (spec_doc.get("launch") or {}).get("script") or not isinstance(spec_doc.get("file"), str):
            return None
        file = Path(spec_doc["file"])
    elif request.file.suffix == ".py":
        file = request.file
    else:
        return None
    return file if str(file.resolve()) in loader.OBSERVED else None


def recordable(results: list) -> bool:
    """Every dump's target came from the command line, a recipe or a spec file (not the local GPU)."""
    return bool(results) and all(str(r.manifest.get("target_reason", "")).startswith(_FIXED_TARGET)
                                 for r in results)


def on_disk(results: list) -> list:
    """The dumps as a repeat will find them: each manifest read back from its folder."""
    return [cache.DumpResult(r.folder, json.loads((r.folder / MANIFEST).read_text()), True, r.key)
            for r in results]


def noted(out_dir: Path, keys: list[str]) -> list:
    """The dumps of these cache keys (cache.NOTED) as a command left them under out_dir, read back; [] when
    one is not there as its entry says."""
    results = []
    for key in keys:
        manifest = cache.lookup(key)
        if manifest is None:
            return []
        results.append(cache.DumpResult(cache.folder_for(out_dir, manifest, key), manifest, True, key))
    try:
        return on_disk(results)
    except (OSError, ValueError):
        return []


def fields_of(command: str, request: Any, variants: Iterable[str], out_dir: Path, with_passes: bool,
              view: dict[str, Any]) -> dict:
    """request_fields for a command's jobs.Request, as irscope.entry reads the same command line."""
    return request_fields(command, str(request.file), view, kernels=request.kernels, signature=request.signature,
                          args=request.named_args, consts=request.consts, target=request.target,
                          sets=request.all_sets(), recipe=request.recipe, variants=tuple(variants),
                          pin_layouts=request.pin_layouts, pin_loops=request.pin_loops,
                          pin_partitions=request.pin_partitions, out=str(out_dir), passes=with_passes)


def remember_request(fields: dict[str, Any], file: Path, inputs: Iterable[Path], absent: Iterable[Path],
                     results: list, summary: str | None, status: int = 0) -> None:
    """`remember` for a command's request whose kernel file is `file` (kernel_file's answer); `results` as
    on_disk read them back."""
    from irscope import adapter
    from irscope.kernel import loader

    seen = loader.OBSERVED[str(file.resolve())]
    remember(fields, results, file, seen.files, seen.env, summary, adapter.cache_invalidating_env(),
             inputs, absent, status)
